"""The composition root: the one place concrete adapters are chosen and wired.

``assemble`` (``laneway.app.assembly``) makes the whole product from a
configuration: engine, pricer, telemetry writer, metrics. ``build_engine``
(``laneway.app.engine``) makes an engine alone, with its transport, source
store, cache and lanes (``laneway.app.lanes``). The library
(``Laneway.from_config``), ``laneway serve``, ``probe``, ``size``, ``batch``
and ``simulate`` all build here, so they cannot drift apart; the engine below
depends on ports only (see ``docs/architecture.md``).
"""

from __future__ import annotations

from laneway.app.assembly import Assembly, ObserverFactory, assemble, telemetry_dir
from laneway.app.engine import build_engine, local_call_loop, open_transport
from laneway.app.lanes import build_lane, build_lanes, pooled_keys

__all__ = [
    "Assembly",
    "ObserverFactory",
    "assemble",
    "build_engine",
    "build_lane",
    "build_lanes",
    "local_call_loop",
    "open_transport",
    "pooled_keys",
    "telemetry_dir",
]
