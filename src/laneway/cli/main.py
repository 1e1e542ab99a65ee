"""The ``laneway`` command.

Each subcommand's module is imported only when that subcommand runs: ``laneway
--help`` (and a mistyped command) needs argparse alone, not the config models,
the engine and aiohttp that ``check`` builds lanes with.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from laneway.core.errors import ConfigError
from laneway.core.extras import require

DEFAULT_CONFIG = "laneway.yaml"
COMMANDS = {
    "spend": "laneway.cli.spend",
    "reload": "laneway.cli.reload",
    "keys": "laneway.cli.keys",
    "teams": "laneway.cli.teams",
    "probe": "laneway.cli.probe",
    "size": "laneway.cli.size",
    "batch": "laneway.cli.batch",
    "import": "laneway.cli.importer",
}
"""Subcommands whose module (imported only when named) has ``main(argv) -> int``."""
PURE_FROZENLIST = "FROZENLIST_NO_EXTENSIONS"
"""Set (unless already set) before ``laneway serve`` imports aiohttp: frozenlist's
compiled extension is C++ and maps libstdc++ (~1 MiB resident), for lists aiohttp
builds once (its tracing signals) and a gateway never touches per request."""


BROKEN_PIPE = 141
"""The status when stdout's reader went away (``laneway spend --json | head``): 128 + SIGPIPE."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand; returns the process exit status.

    A reader that closes stdout early ends the command quietly with
    ``BROKEN_PIPE``, not a ``BrokenPipeError`` traceback: stdout is pointed at
    ``/dev/null`` so the interpreter's last flush does not fail again.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            return _run(args)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE


def version() -> str:
    """The installed laneway's version."""
    from importlib.metadata import version as installed

    return installed("laneway")


def _run(args: list[str]) -> int:
    if args[:1] in (["--version"], ["-V"]):
        print(f"laneway {version()}")
        return 0
    if args[:1] == ["sim"]:
        from laneway.sim import main as sim_main

        return sim_main(args[1:])
    if args[:1] == ["serve"]:
        os.environ.setdefault(PURE_FROZENLIST, "1")
        from laneway.cli.serve import main as serve_main

        return serve_main(args[1:])
    if args[:1] and args[0] in COMMANDS:
        module: Any = importlib.import_module(COMMANDS[args[0]])
        status: int = module.main(args[1:])
        return status
    if args[:1] == ["simulate"]:
        try:
            require("redis", "laneway simulate (its two-replica scenario shares state in Redis)")
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        from laneway.cli.simulate import main as simulate_main

        return simulate_main(args[1:])
    parser = _parser()
    ns = parser.parse_args(args)
    if ns.command == "check":
        path = ns.config or ns.path or DEFAULT_CONFIG
        return check(path, strict=ns.strict, env_example=ns.env_example)
    parser.print_help()
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="laneway", description="LLM lanes with enforced policies."
    )
    parser.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    check_cmd = sub.add_parser("check", help="validate a config and show each lane's policy")
    check_cmd.add_argument("path", nargs="?", help=f"the config (default: {DEFAULT_CONFIG})")
    check_cmd.add_argument("--config", help="the config (the same as the positional path)")
    check_cmd.add_argument("--strict", action="store_true", help="treat warnings as errors")
    check_cmd.add_argument(
        "--env-example",
        action="store_true",
        help="also write .env.example beside the config: every variable it reads",
    )
    sub.add_parser("sim", help="run the loopback fault simulator (laneway sim --help)")
    sub.add_parser("serve", help="serve the lanes as an OpenAI-compatible API (--help)")
    sub.add_parser("reload", help="check the config and have the running server load it (--help)")
    sub.add_parser("spend", help="calls, tokens and cost from telemetry (--help)")
    sub.add_parser(
        "keys", help="the keys: lanes, limits, spend; create|list|revoke|rotate stored ones"
    )
    sub.add_parser("teams", help="stored keys' teams: create|list|delete (--help)")
    sub.add_parser("probe", help="one live call on a lane, reported in full (--help)")
    sub.add_parser("batch", help="embed a corpus or run a prompt set on a lane (--help)")
    sub.add_parser("import", help="translate a LiteLLM proxy config to laneway.yaml (--help)")
    sub.add_parser("simulate", help="chaos scenarios against the simulator (--help)")
    sub.add_parser("size", help="deadline, timeouts and retries from measured latencies (--help)")
    return parser


def check(path: str, *, strict: bool = False, env_example: bool = False) -> int:
    """Validate ``path`` and print the lane table; non-zero on errors.

    The errors are ``serve``'s refusals: a config it would not load, a
    driver missing, a telemetry, spool or cache path this user cannot write.

    ``env_example`` also writes ``.env.example`` beside the config.
    """
    from laneway.app.checks import check_config
    from laneway.cli.check import env_example as example_env
    from laneway.cli.check import price_report, render
    from laneway.cli.writable import unwritable
    from laneway.config.loaded import read_config

    try:
        loaded = read_config(Path(path))
        check_config(loaded)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    config, environ = loaded.config, loaded.environ
    if env_example:
        target = Path(path).parent / ".env.example"
        target.write_text(example_env(config), encoding="utf-8")
        print(f"wrote {target}")
    table, warnings = render(config, environ)
    prices, errors, budget_warnings = price_report(config, time.time())
    errors = [*unwritable(config, Path(path).absolute().parent), *errors]
    warnings = [*warnings, *budget_warnings]
    print(table)
    print("\n".join(prices))
    for warning in warnings:
        print(f"warning: {warning}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"{len(config.lanes)} lane(s), {len(warnings)} warning(s)")
    return 1 if errors or (strict and warnings) else 0
