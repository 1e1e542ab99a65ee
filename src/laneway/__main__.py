"""``python -m laneway``: the ``laneway`` command, for environments without its script on PATH."""

from laneway.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
