"""``laneway serve``: serve the lanes, and reload their config on SIGHUP.

This is the command: its arguments, the checks before anything starts
(config, bind, port, writable files), the banner, the pidfile. What serves
is built by the composition root (``laneway.app.serving``: ``Served``, over
``app.composer.Composer``, which makes each config's gateway) from the parts
of ``laneway.serving``: the uvicorn settings, the generations swapped on
SIGHUP without dropping a call, the reloader, and with ``--workers N`` the
supervisor and its forked workers, each of which builds its own gateway from
the config the supervisor checked and published (``worker_app``), since
engines, connection pools and telemetry writers cannot cross processes; their
metrics meet in a private folder the supervisor makes (``SHARE_DIR_ENV``), so
any worker's ``/metrics`` reports them all. The server says who it is and how
its last reload went in a status file in the run folder (``serving.rundir``),
which ``laneway reload`` reads. The simulator is imported for ``--demo`` only.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import shutil
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from laneway.app.checks import Bind, check_config
from laneway.app.serving import Served, worker_gateway
from laneway.cli.banner import banner
from laneway.cli.writable import unwritable
from laneway.config.loaded import LoadedConfig, read_config
from laneway.core.errors import ConfigError
from laneway.metrics import SHARE_DIR_ENV
from laneway.server.access_log import LogFormat
from laneway.server.prompt import PromptServer
from laneway.server.protocol import LimitedConfig
from laneway.serving.generations import ReloadingGateway
from laneway.serving.rundir import StatusFile, run_dir, write_pidfile
from laneway.serving.settings import LOG_FORMAT, connection_limits, log_config, uvicorn_config
from laneway.tracing.setup import check_tracing

__all__ = ["main", "worker_app"]

DEFAULT_CONFIG = "laneway.yaml"
BIND_ENV = "LANEWAY_SERVE_BIND"
"""For workers: ``1`` or ``0`` (``--insecure``) then the host, for a reload's bind check."""
WORKER_FACTORY = "laneway.cli.serve:worker_app"
ACCESS_LOG_ENV = "LANEWAY_ACCESS_LOG"
"""The access log's format for workers (``json`` or ``text``; unset: none)."""
LOG_LEVELS = ("debug", "info", "warning", "error")
GET_A_CONFIG = """To get one:
  laneway serve --demo                  demo lanes on a built-in simulator, no keys needed
  laneway serve --config PATH           a config elsewhere
  examples/laneway.yaml                 an annotated example to copy (in the repository)"""

log = logging.getLogger("laneway.serve")


def main(argv: Sequence[str]) -> int:
    """Run ``laneway serve``; returns the exit status."""
    args = parser().parse_args(argv)
    if args.demo and args.config is not None:
        print("error: --demo brings its own lanes; drop --config", file=sys.stderr)
        return 2
    if not args.demo:
        return serve(args, Path(args.config or DEFAULT_CONFIG))
    from laneway.cli.demo import write_demo_config
    from laneway.sim import start_in_thread

    sim = start_in_thread(port=0)
    path = write_demo_config(sim.base_url)

    def clean_up() -> None:
        sim.stop()
        shutil.rmtree(path.parent, ignore_errors=True)

    _clean_up_on_sigterm(clean_up)
    try:
        return serve(args, path, demo=True)
    finally:
        clean_up()


def _clean_up_on_sigterm(clean_up: Callable[[], None]) -> None:
    """Run ``clean_up`` when SIGTERM ends the process, then die of SIGTERM as before.

    uvicorn handles SIGTERM itself (drain, flush) and then re-raises it under the
    handler it found, which would end the process before any ``finally`` runs.
    A clean-up installed earlier (the demo's) runs after this one.
    """
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        clean_up()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, handler)


def parser() -> argparse.ArgumentParser:
    """The ``laneway serve`` arguments."""
    p = argparse.ArgumentParser(
        prog="laneway serve", description="Serve the lanes as an OpenAI-compatible API."
    )
    p.add_argument("--config", help=f"path to the config (default: {DEFAULT_CONFIG})")
    p.add_argument("--host", help="address to bind (default: server.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to bind (default: server.port, 4000)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1)")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host with no server.keys (anyone reaching it may call)",
    )
    p.add_argument("--demo", action="store_true", help="serve demo lanes on a built-in simulator")
    p.add_argument(
        "--log-format",
        choices=["json", "text"],
        default="json",
        help="access log lines: JSON for machines (default) or text for people",
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="info (default) logs every call; warning and error keep only problems",
    )
    p.add_argument("--pidfile", help="write the server's pid to this file (removed at exit)")
    p.add_argument(
        "--run-dir",
        help="folder of the status file laneway reload reads (default: $LANEWAY_RUN_DIR, "
        "$RUNTIME_DIRECTORY, $XDG_RUNTIME_DIR/laneway, else <tmp>/laneway-<uid>)",
    )
    return p


class NotServing(Exception):
    """``laneway serve`` does not start: why (printed as an error) and the exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def serve(args: argparse.Namespace, path: Path, *, demo: bool = False) -> int:
    """Load the config at ``path``, check the bind, print what will run, serve until stopped."""
    try:
        loaded = _loaded(args, path, demo=demo)
        config = loaded.config
        host = args.host or config.server.host
        port = config.server.port if args.port is None else args.port
        bind = Bind(host, args.insecure)
        refusal = _refusal(args, bind, loaded) or bind_problem(host, port)
        if refusal is not None:
            raise NotServing(refusal, 2)
        access: LogFormat | None = args.log_format if args.log_level in ("debug", "info") else None
        served = Served(loaded, bind, access, StatusFile(run_dir(args.run_dir), os.getpid()))
        settings = uvicorn_config(
            _app(args, served, access),
            host=host,
            port=port,
            drain_timeout=config.server.drain_timeout,
            workers=args.workers,
            limits=connection_limits(config.server, args.workers),
            log_config=log_config(args.log_level.upper()),
        )
        sock = settings.bind_socket()
        sock.listen(settings.backlog)  # queue connections from now on, so "ready" is true
        url = _url(host, sock.getsockname()[1])
        pidfile = _pidfile(args)
    except NotServing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.status
    served.started(url, args.workers)
    clean_up = _clean_up(url, served, pidfile)
    _clean_up_on_sigterm(clean_up)
    where = config_dir(path)
    text = banner(config, loaded.environ, url, args.workers, where, demo=path if demo else None)
    *lines, ready = text.splitlines()
    print(stamped("\n".join([*lines, served.describe(), ready])), flush=True)
    try:
        _run(settings, sock, served)
    finally:
        clean_up()
    return 0


def _loaded(args: argparse.Namespace, path: Path, *, demo: bool) -> LoadedConfig:
    """The config at ``path``, read, with the tracing the environment asks for checked."""
    if args.config is None and not demo and not path.exists():
        raise NotServing(f"no {DEFAULT_CONFIG} in this folder.\n{GET_A_CONFIG}", 1)
    try:
        loaded = read_config(path.absolute())
        check_tracing(os.environ)
    except ConfigError as exc:
        raise NotServing(str(exc), 1) from exc
    return loaded


def _app(
    args: argparse.Namespace, served: Served, access: LogFormat | None
) -> ReloadingGateway | str:
    """One process's reloading gateway, or for ``--workers`` the factory each worker imports
    (told the access log and the bind through the environment it inherits)."""
    if args.workers > 1:
        os.environ[ACCESS_LOG_ENV] = access or ""
        os.environ[BIND_ENV] = f"{int(served.bind.insecure)}{served.bind.host}"
        return WORKER_FACTORY
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the loop answers it (startup)
    try:
        return served.single_process()
    except ConfigError as exc:
        raise NotServing(str(exc), 1) from exc


def _pidfile(args: argparse.Namespace) -> Path | None:
    """``--pidfile``, written (``None`` without it)."""
    pidfile = None if args.pidfile is None else Path(args.pidfile)
    try:
        if pidfile is not None:
            write_pidfile(pidfile)
    except OSError as exc:
        raise NotServing(f"cannot write --pidfile {pidfile}: {exc.strerror}", 1) from exc
    return pidfile


def _clean_up(url: str, served: Served, pidfile: Path | None) -> Callable[[], None]:
    """What ends a serve, once or more (SIGTERM, then the ``finally``): the stop line said
    once, the status file and the workers' folder removed, the pidfile removed."""
    said = False

    def clean_up() -> None:
        nonlocal said
        if not said:
            said = True
            print(stamped(f"laneway serve: stopped ({url})"), flush=True)
        served.stopped()
        if pidfile is not None:
            pidfile.unlink(missing_ok=True)

    return clean_up


def stamped(text: str) -> str:
    """``text``'s lines, each starting with its time as every log line does (``LOG_FORMAT``).

    The demo's commands to paste (the indented lines under ``try:``) are left bare.
    """
    formatter = logging.Formatter(LOG_FORMAT)
    out: list[str] = []
    pasting = False
    for line in text.splitlines():
        pasting = (pasting and line.startswith("  ")) or line == "try:"
        if pasting and line != "try:":
            out.append(line)
            continue
        record = logging.LogRecord(log.name, logging.INFO, "", 0, line, None, None)
        out.append(formatter.format(record))
    return "\n".join(out)


def _refusal(args: argparse.Namespace, bind: Bind, loaded: LoadedConfig) -> str | None:
    if args.workers < 1:
        return "--workers must be at least 1"
    try:
        check_config(loaded, bind)
    except ConfigError as exc:
        return str(exc)
    problems = unwritable(loaded.config, config_dir(loaded.path))
    return "\n".join(problems) if problems else None


def bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (a port in use, a foreign address), or ``None``.

    Checked before anything starts, so the answer names the port and the flag
    instead of uvicorn's bare ``[Errno 98]``.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"port {port} on {host} is in use: choose another with --port (or server.port)"
                )
            return (
                f"cannot listen on {host}:{port}: {exc.strerror}: "
                "choose another with --host/--port (or server.host/server.port)"
            )
    return None


def _run(settings: LimitedConfig, sock: socket.socket, served: Served) -> None:
    """Serve on ``sock`` (one process, or a supervisor and its workers) until stopped."""
    try:
        if settings.workers > 1:
            served.supervisor(settings, sock).run()
        else:
            PromptServer(settings).run(sockets=[sock])
    except KeyboardInterrupt:
        pass


def worker_app() -> ReloadingGateway:
    """Build one worker's gateway from the config the supervisor published."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the loop answers it (startup)
    share = Path(os.environ[SHARE_DIR_ENV])
    access = os.environ.get(ACCESS_LOG_ENV) or None
    log_format: LogFormat | None = "text" if access == "text" else "json" if access else None
    bound = os.environ.get(BIND_ENV, "0127.0.0.1")
    return worker_gateway(share, Bind(bound[1:], bound[0] == "1"), log_format)


def config_dir(path: Path) -> Path:
    """The folder of the config file at ``path`` (absolute; symlinks not followed)."""
    return path.absolute().parent


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
