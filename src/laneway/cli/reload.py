"""``laneway reload``: check the config here, signal the server, and say how its reload went.

The server is found by its status file in the run folder (``rundir``): by
``--pid``, by the pid in ``--pidfile``, or else as the one running the
``--config`` file (``laneway.yaml`` by default). The config is read and
checked the way the server will (``loaded.check_config``); a bad one is
refused here and the server never hears of it. Otherwise the server gets
SIGHUP, and the command waits until its status file counts one more reload:
``applied`` (exit 0, with the new generation and hash) or ``refused`` (exit
1, with the server's reason; the old config keeps serving).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from laneway.app.checks import Bind, check_config
from laneway.config.loaded import read_config
from laneway.core.errors import ConfigError
from laneway.core.processes import running
from laneway.core.units import parse_duration
from laneway.serving.rundir import (
    ServerStatus,
    StatusFile,
    read_pidfile,
    run_dir,
    running_servers,
)

DEFAULT_CONFIG = "laneway.yaml"
POLL_SECONDS = 0.1


class NotFound(Exception):
    """No running server matches what the command was told (the message says what to pass)."""


def main(argv: Sequence[str]) -> int:
    """Run ``laneway reload``; 0 applied, 1 refused or no answer, 2 no server found."""
    args = parser().parse_args(argv)
    folder = run_dir(args.run_dir)
    try:
        status = find_server(args, folder)
    except NotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = Path(args.config).absolute() if args.config else Path(status.config)
    try:
        check_config(read_config(path), Bind(status.host, status.insecure))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(
            f"not reloaded: pid {status.pid} keeps serving generation {status.generation} "
            f"({status.hash})",
            file=sys.stderr,
        )
        return 1
    os.kill(status.pid, signal.SIGHUP)
    answer = wait_for_answer(StatusFile(folder, status.pid), status.reloads, args.timeout)
    return report(status, answer, args.timeout)


def parser() -> argparse.ArgumentParser:
    """The ``laneway reload`` arguments."""
    p = argparse.ArgumentParser(
        prog="laneway reload",
        description="Check the config, then have the running laneway serve load it "
        "(SIGHUP) and report whether it did.",
    )
    p.add_argument(
        "--config",
        help="the config to check, and to find the server by when no pid is given "
        f"(default: the server's own, or {DEFAULT_CONFIG})",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--pid", type=int, help="the server's pid (laneway serve's main process)")
    which.add_argument("--pidfile", help="a file holding the server's pid (serve --pidfile)")
    p.add_argument("--run-dir", help="the folder of the servers' status files (see serve --help)")
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=60.0,
        help="how long to wait for the server's answer (default: 60s)",
    )
    return p


def find_server(args: argparse.Namespace, folder: Path) -> ServerStatus:
    """The status of the server the arguments name (see the module doc)."""
    pid = args.pid
    if args.pidfile is not None:
        try:
            pid = read_pidfile(Path(args.pidfile))
        except (OSError, ValueError) as exc:
            raise NotFound(f"no pid in {args.pidfile}: {exc}") from exc
    if pid is not None:
        status = StatusFile(folder, pid).read()
        if status is None or not running(pid):
            raise NotFound(
                f"no laneway serve with pid {pid} has a status file in {folder} "
                "(pass --run-dir, or the server's LANEWAY_RUN_DIR)"
            )
        return status
    config = str(Path(args.config or DEFAULT_CONFIG).absolute())
    matches = [s for s in running_servers(folder) if s.config == config]
    if not matches:
        raise NotFound(
            f"no laneway serve of {config} has a status file in {folder} "
            "(pass --pid, --pidfile, --config or --run-dir)"
        )
    if len(matches) > 1:
        pids = ", ".join(str(s.pid) for s in matches)
        raise NotFound(f"several servers run {config} (pids {pids}): pass --pid")
    return matches[0]


def wait_for_answer(file: StatusFile, before: int, timeout: float) -> ServerStatus | None:
    """The server's status once it counts more than ``before`` reloads, or ``None`` at timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = file.read()
        if status is not None and status.reloads > before:
            return status
        time.sleep(POLL_SECONDS)
    return None


def report(before: ServerStatus, answer: ServerStatus | None, timeout: float) -> int:
    """Print the outcome; the exit status."""
    if answer is None:
        print(
            f"error: pid {before.pid} did not report a reload within {timeout:g} s (see its log)",
            file=sys.stderr,
        )
        return 1
    last = answer.last
    if last is not None and last.outcome == "refused":
        print(f"error: reload refused by pid {answer.pid}: {last.reason}", file=sys.stderr)
        print(f"still serving generation {answer.generation} ({answer.hash})", file=sys.stderr)
        return 1
    print(
        f"reloaded: pid {answer.pid} serves generation {answer.generation} ({answer.hash}), "
        f"was {before.generation} ({before.hash}); {answer.workers} worker(s)"
    )
    return 0
