"""Other gateways' configs translated into laneway's: pure functions, data in, data out.

Each translator reads a parsed config and returns the laneway config as plain
data with what it could not carry listed; ``laneway import`` (the CLI) reads
the file, renders the YAML and validates it.
"""
