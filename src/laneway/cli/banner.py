"""What ``laneway serve`` prints when it starts: the URL, each lane's readiness, the keys,
where telemetry goes, the metrics and status pages, the connection limits and tracing."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from laneway.app.lanes import build_lanes
from laneway.config.models import LanewayConfig
from laneway.core.units import format_duration
from laneway.server import KeyRing, lane_states
from laneway.server.protocol import ConnectionLimits
from laneway.serving.settings import connection_limits
from laneway.telemetry import SqliteTelemetryStore, store_for_url
from laneway.tracing.setup import describe_tracing


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
    if config.server.metrics:
        scrape = "open" if keys.open else "bearer key for every lane, or one with lanes: []"
        lines.append(f"metrics: {url}/metrics ({scrape})")
        browser = "open" if keys.open else "the same keys; a browser asks for one as the password"
        lines.append(f"status page: {url}/status ({browser})")
    else:
        lines.append("metrics and status page: off (server.metrics: false)")
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
