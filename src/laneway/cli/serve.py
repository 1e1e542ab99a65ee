"""``laneway serve``: the gateway over the assembled product, served.

``build_gateway`` takes the engine, pricer, telemetry writer and metrics
from ``laneway.app.assemble``, as the library does, and adds what only a
server has: the access log, connection metrics, key limits and the
``Gateway``. Paths in the config (the telemetry SQLite file, the cache) are
relative to the config file's folder.
With ``--workers N`` each uvicorn worker builds its own from the config file
the environment names (``worker_app``), since engines, connection pools and
telemetry writers cannot cross processes; their metrics meet in a private
folder the supervisor makes (``SHARE_DIR_ENV``), so any worker's ``/metrics``
reports them all. The simulator is imported for ``--demo`` only.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType

import uvicorn
from uvicorn.supervisors import Multiprocess

from laneway.app import ObserverFactory, assemble, build_lanes
from laneway.config.load import load_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.core.records import RecordPricer
from laneway.core.redact import redact_logs
from laneway.core.units import format_duration
from laneway.metrics import SHARE_DIR_ENV
from laneway.server import Gateway, KeyRing, lane_states, uvicorn_config
from laneway.server.access_log import AccessLog, LogFormat
from laneway.server.limits import key_limits
from laneway.server.protocol import CONNECTIONS, ConnectionLimits
from laneway.server.run import connection_limits, log_config
from laneway.telemetry import SqliteTelemetryStore, store_for_url
from laneway.tracing.setup import check_tracing, describe_tracing

DEFAULT_CONFIG = "laneway.yaml"
CONFIG_ENV = "LANEWAY_SERVE_CONFIG"
"""The config file's absolute path, for workers (set by ``laneway serve --workers``)."""
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
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        clean_up()
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
    return p


def serve(args: argparse.Namespace, path: Path, *, demo: bool = False) -> int:
    """Load the config at ``path``, check the bind, print what will run, serve until stopped."""
    if args.config is None and not demo and not path.exists():
        print(f"error: no {DEFAULT_CONFIG} in this folder.\n{GET_A_CONFIG}", file=sys.stderr)
        return 1
    try:
        config, environ = load_config(path)
        check_tracing(os.environ)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    host = args.host or config.server.host
    port = config.server.port if args.port is None else args.port
    refusal = _refusal(args, host, config) or bind_problem(host, port)
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    app: Gateway | str = WORKER_FACTORY
    access: LogFormat | None = args.log_format if args.log_level in ("debug", "info") else None
    share: Path | None = None
    if args.workers > 1:
        os.environ[CONFIG_ENV] = str(path.absolute())  # workers inherit the environment
        os.environ[ACCESS_LOG_ENV] = access or ""
        share = Path(tempfile.mkdtemp(prefix="laneway-metrics-"))  # private: mode 0700
        os.environ[SHARE_DIR_ENV] = str(share)
    else:
        try:
            app = build_gateway(config, environ, config_dir(path), access_log=access)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    settings = uvicorn_config(
        app,
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
    where = config_dir(path)
    text = banner(config, environ, url, args.workers, where, demo=path if demo else None)
    print(text, flush=True)
    try:
        _run(settings, sock)
    finally:
        if share is not None:
            shutil.rmtree(share, ignore_errors=True)
    return 0


def _refusal(args: argparse.Namespace, host: str, config: LanewayConfig) -> str | None:
    if args.workers < 1:
        return "--workers must be at least 1"
    return bind_refusal(host, keyed=bool(config.server.keys), insecure=args.insecure)


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


def _run(settings: uvicorn.Config, sock: socket.socket) -> None:
    """Serve on ``sock`` (one process, or a supervisor and its workers) until stopped."""
    try:
        if settings.workers > 1:
            Supervisor(settings, sockets=[sock]).run()
        else:
            signal.signal(signal.SIGHUP, _ignore_hangup)
            uvicorn.Server(settings).run(sockets=[sock])
    except KeyboardInterrupt:
        pass


HANGUP_IGNORED = (
    "SIGHUP ignored: laneway serve has no reload; calls in flight go on "
    "(restart the process to apply a changed config)"
)


def _ignore_hangup(signum: int, frame: object) -> None:
    log.warning(HANGUP_IGNORED)


class Supervisor(Multiprocess):
    """uvicorn's worker supervisor, except that SIGHUP restarts no worker (see ``_run``)."""

    def handle_hup(self) -> None:
        """Log and carry on: a restart would cut the workers' calls in flight."""
        log.warning(HANGUP_IGNORED)


def worker_app() -> Gateway:
    """Build one worker's gateway from the config file ``laneway serve`` named."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the supervisor logs it; see Supervisor
    path = Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)
    config, environ = load_config(path)
    access = os.environ.get(ACCESS_LOG_ENV) or None
    log_format: LogFormat | None = "text" if access == "text" else "json" if access else None
    share = os.environ.get(SHARE_DIR_ENV)
    base_dir = config_dir(path)
    return build_gateway(
        config, environ, base_dir, access_log=log_format, share=Path(share) if share else None
    )


def build_gateway(
    config: LanewayConfig,
    environ: Mapping[str, str],
    base_dir: Path,
    *,
    access_log: LogFormat | None = None,
    share: Path | None = None,
) -> Gateway:
    """The gateway over the assembled engine, pricing, telemetry, metrics and cache.

    ``base_dir`` is the config file's folder: relative telemetry and cache
    paths start there. The telemetry writer (``None`` when ``telemetry.url``
    is off) is started and flushed by the gateway's lifespan. ``access_log``
    writes one line per call to stderr in that format (``None``: no access log).
    Every log record and telemetry row of the process is redacted of the
    configuration's secrets from here on (access-log fields are redacted as
    they enter: request ids at the edge, upstream text at the transport).
    ``share`` is the folder where workers pool their metrics (``None``: one process).
    Spans are exported when the ``laneway[otel]`` extra is installed and the
    process's ``OTEL_*`` variables ask for traces (read by the SDK itself).
    """
    built = assemble(
        config,
        environ,
        base_dir,
        access_log=None if access_log is None else _access_log(access_log),
        share=share,
        tracing=True,
    )
    redact_logs(built.redactor)
    built.metrics.watch_connections(CONNECTIONS)
    engine = built.engine
    limits = key_limits(config, engine.clock, pricer=built.pricer)  # the prices found once
    return Gateway(engine, environ, metrics=built.metrics, telemetry=built.telemetry, limits=limits)


def _access_log(log_format: LogFormat) -> ObserverFactory:
    """The access log to stderr in ``log_format``, pricing with the assembly's pricer."""

    def make(price: RecordPricer) -> AccessLog:
        return AccessLog(price, sys.stderr, log_format)

    return make


def config_dir(path: Path) -> Path:
    """The folder of the config file at ``path`` (absolute; symlinks not followed)."""
    return path.absolute().parent


def bind_refusal(host: str, *, keyed: bool, insecure: bool) -> str | None:
    """Why listening on ``host`` is refused, or ``None``: a keyless gateway stays on loopback."""
    if keyed or insecure or is_loopback(host):
        return None
    return (
        f"refusing to listen on {host}: no server.keys are configured, so anyone who can "
        "reach this address could spend your upstream keys; configure server.keys, "
        "bind a loopback address, or pass --insecure"
    )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def banner(
    config: LanewayConfig,
    environ: Mapping[str, str],
    url: str,
    workers: int,
    base_dir: Path,
    *,
    demo: Path | None = None,
) -> str:
    """What ``laneway serve`` prints at start: URL, lanes' readiness, keys, where data goes.

    ``demo`` is the path of the written demo config, when serving the demo.
    """
    keys = KeyRing(config.server.keys, list(config.lanes), environ, config.aliases)
    states = lane_states(build_lanes(config, environ), config.fallback_chain)
    access = "open (no server.keys; loopback only)" if keys.open else "bearer keys"
    lines = [f"laneway serve: {url}/v1  ({workers} worker(s), {access})"]
    width = max(len(state.name) for state in states)
    for state in states:
        status = "ready" if state.ready else "NOT READY"
        if not state.ready and state.servable:
            status += f" (served by fallback lane {state.serves_via})"
        lines.append(f"  {state.name.ljust(width)}  {state.kind:5}  {status}")
        lines.extend(f"      {problem}" for problem in state.problems)
    lines.extend(f"warning: {problem}" for problem in keys.problems)
    lines.append(f"telemetry: {describe_telemetry(config.telemetry.url, base_dir)}")
    scrape = "open" if keys.open else "bearer key for every lane, or one with lanes: []"
    lines.append(f"metrics: {url}/metrics ({scrape})")
    browser = "open" if keys.open else "the same keys; a browser asks for one as the password"
    lines.append(f"status page: {url}/status ({browser})")
    lines.append(describe_limits(connection_limits(config.server), workers))
    tracing = describe_tracing(os.environ)
    if tracing is not None:
        lines.append(tracing)
    if demo is not None:
        from laneway.cli.demo import DEMO_FILE, demo_examples

        lines.append(f"demo lanes from {DEMO_FILE}, written to {demo}")
        lines.append(demo_examples(url, demo))
    drain = format_duration(config.server.drain_timeout)
    lines.append(f"ready; Ctrl+C stops, SIGTERM drains calls in flight (up to {drain})")
    return "\n".join(lines)


def describe_limits(limits: ConnectionLimits, workers: int) -> str:
    """The connection limits in one line (``max_connections`` for all workers together)."""
    return (
        f"connections: at most {limits.max_connections}; head within "
        f"{format_duration(limits.header_timeout)} and {limits.max_header_bytes // 1024} KiB, "
        f"body within {format_duration(limits.body_timeout)}, idle "
        f"{format_duration(limits.keepalive_timeout)} (server.*; {workers} worker(s) share them)"
    )


def describe_telemetry(url: str, base_dir: Path) -> str:
    """Where call records go: the SQLite file, PostgreSQL (no credentials shown), or off."""
    store = store_for_url(url, base_dir)
    if store is None:
        return "off (telemetry.url: none)"
    if isinstance(store, SqliteTelemetryStore):
        return str(store.path)
    return "PostgreSQL (telemetry.url)"


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
