"""``laneway serve``: compose transport, engine and gateway, and serve them.

The composition root of the gateway process: only here are the aiohttp
transport, the ``Engine`` and the ``Gateway`` put together. With
``--workers N`` each uvicorn worker builds its own from the environment
(``worker_app``), since engines and their connection pools cannot cross
processes.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from collections.abc import Mapping, Sequence

import uvicorn
from uvicorn.supervisors import Multiprocess

from laneway.cli.demo import DEMO_FILE, demo_config, demo_examples
from laneway.config.load import load_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.core.units import format_duration
from laneway.engine.gateway import Engine
from laneway.engine.lane import build_lane
from laneway.http.aiohttp import AiohttpTransport
from laneway.server import Gateway, KeyRing, lane_states, uvicorn_config
from laneway.sim import start_in_thread

DEFAULT_CONFIG = "laneway.yaml"
CONFIG_ENV = "LANEWAY_SERVE_CONFIG"
"""The config path, for workers (set by ``laneway serve --workers``)."""
DEMO_SIM_ENV = "LANEWAY_SERVE_DEMO_SIM"
"""The demo simulator's URL, for workers of ``laneway serve --demo --workers``."""
WORKER_FACTORY = "laneway.cli.serve:worker_app"


def main(argv: Sequence[str]) -> int:
    """Run ``laneway serve``; returns the exit status."""
    args = parser().parse_args(argv)
    if args.demo and args.config is not None:
        print("error: --demo brings its own lanes; drop --config", file=sys.stderr)
        return 2
    if not args.demo:
        return serve(args, None)
    sim = start_in_thread(port=0)
    try:
        return serve(args, sim.base_url)
    finally:
        sim.stop()


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
    return p


def serve(args: argparse.Namespace, sim_url: str | None) -> int:
    """Load the lanes, check the bind, print what will run, and serve until stopped."""
    try:
        config, environ = _load(args.config, sim_url)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    host = args.host or config.server.host
    port = config.server.port if args.port is None else args.port
    refusal = _refusal(args, host, config)
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    app: Gateway | str = WORKER_FACTORY
    if args.workers > 1:
        _hand_to_workers(args.config, sim_url)
    else:
        app = build_gateway(config, environ)
    settings = uvicorn_config(
        app, host=host, port=port, drain_timeout=config.server.drain_timeout, workers=args.workers
    )
    sock = settings.bind_socket()
    sock.listen(settings.backlog)  # queue connections from now on, so "ready" is true
    url = _url(host, sock.getsockname()[1])
    print(banner(config, environ, url, args.workers, demo=sim_url is not None), flush=True)
    _run(settings, sock)
    return 0


def _refusal(args: argparse.Namespace, host: str, config: LanewayConfig) -> str | None:
    if args.workers < 1:
        return "--workers must be at least 1"
    return bind_refusal(host, keyed=bool(config.server.keys), insecure=args.insecure)


def _run(settings: uvicorn.Config, sock: socket.socket) -> None:
    """Serve on ``sock`` (one process, or a supervisor and its workers) until stopped."""
    try:
        if settings.workers > 1:
            Multiprocess(settings, sockets=[sock]).run()
        else:
            uvicorn.Server(settings).run(sockets=[sock])
    except KeyboardInterrupt:
        pass


def worker_app() -> Gateway:
    """Build one worker's gateway from the environment ``laneway serve`` prepared."""
    config, environ = _load(os.environ.get(CONFIG_ENV), os.environ.get(DEMO_SIM_ENV))
    return build_gateway(config, environ)


def build_gateway(config: LanewayConfig, environ: Mapping[str, str]) -> Gateway:
    """An engine over a pooled aiohttp transport, and the gateway serving it."""
    return Gateway(Engine(config, environ, AiohttpTransport()), environ)


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
    config: LanewayConfig, environ: Mapping[str, str], url: str, workers: int, *, demo: bool
) -> str:
    """What ``laneway serve`` prints at start: the URL, each lane's readiness, and keys."""
    keys = KeyRing(config.server.keys, list(config.lanes), environ)
    states = lane_states({n: build_lane(n, lane, environ) for n, lane in config.lanes.items()})
    access = "open (no server.keys; loopback only)" if keys.open else "bearer keys"
    lines = [f"laneway serve: {url}/v1  ({workers} worker(s), {access})"]
    width = max(len(state.name) for state in states)
    for state in states:
        status = "ready" if state.ready else "NOT READY"
        lines.append(f"  {state.name.ljust(width)}  {state.kind:5}  {status}")
        lines.extend(f"      {problem}" for problem in state.problems)
    lines.extend(f"warning: {problem}" for problem in keys.problems)
    if demo:
        lines.append(f"demo lanes from {DEMO_FILE}")
        lines.append(demo_examples(url))
    drain = format_duration(config.server.drain_timeout)
    lines.append(f"ready; Ctrl+C stops, SIGTERM drains calls in flight (up to {drain})")
    return "\n".join(lines)


def _load(path: str | None, sim_url: str | None) -> tuple[LanewayConfig, Mapping[str, str]]:
    if sim_url is not None:
        return demo_config(sim_url)
    return load_config(path or DEFAULT_CONFIG)


def _hand_to_workers(path: str | None, sim_url: str | None) -> None:
    """Tell the worker processes (which inherit the environment) what to load."""
    if sim_url is not None:
        os.environ[DEMO_SIM_ENV] = sim_url
    else:
        os.environ[CONFIG_ENV] = os.path.abspath(path or DEFAULT_CONFIG)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
