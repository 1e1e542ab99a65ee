"""CLI layer: the ``laneway`` subcommands; each builds what it runs through ``laneway.app``."""
