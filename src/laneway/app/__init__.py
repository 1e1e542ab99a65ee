"""The composition root: the one place concrete adapters are chosen and wired.

``assemble`` (``laneway.app.assembly``) makes the whole product from a
configuration: engine, pricer, telemetry writer, metrics. ``build_engine``
(``laneway.app.engine``) makes an engine alone, with its transport, source
store, cache and lanes (``laneway.app.lanes``). The library
(``Laneway.from_config``), ``laneway serve``, ``probe``, ``size``, ``batch``
and ``simulate`` all build here, so they cannot drift apart; the engine below
depends on ports only (see ``docs/architecture.md``).

Each name is imported from its module on first use: ``laneway check`` builds
lanes (``laneway.app.lanes``) without loading the transport, telemetry and
state backends that ``assembly`` and ``engine`` bring in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from laneway.app.assembly import Assembly, ObserverFactory, assemble, telemetry_dir
    from laneway.app.engine import build_engine, local_call_loop, open_transport
    from laneway.app.lanes import build_lane, build_lanes, pooled_keys

_LAZY = {
    "Assembly": "laneway.app.assembly",
    "ObserverFactory": "laneway.app.assembly",
    "assemble": "laneway.app.assembly",
    "telemetry_dir": "laneway.app.assembly",
    "build_engine": "laneway.app.engine",
    "local_call_loop": "laneway.app.engine",
    "open_transport": "laneway.app.engine",
    "build_lane": "laneway.app.lanes",
    "build_lanes": "laneway.app.lanes",
    "pooled_keys": "laneway.app.lanes",
}

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


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import a name's module when it is first asked for (``laneway check`` needs only lanes)."""
