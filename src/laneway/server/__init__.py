"""Server layer: ``laneway serve``, the OpenAI-compatible gateway (raw ASGI).

Depends on ``laneway.engine`` and below. It receives a built ``Engine`` and
never imports ``laneway.http`` or ``aiohttp``: only ``laneway.cli`` composes
transports, engines and servers. Never imports ``laneway.client`` either.

Each name is imported from its module on first use: ``laneway check`` reads
key and limit rules (``keys``, ``limits``) without loading the gateway and uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from laneway.server.app import Gateway
    from laneway.server.health import LaneState, lane_states
    from laneway.server.keys import KeyRing

_LAZY = {
    "Gateway": "laneway.server.app",
    "LaneState": "laneway.server.health",
    "lane_states": "laneway.server.health",
    "KeyRing": "laneway.server.keys",
}

__all__ = ["Gateway", "KeyRing", "LaneState", "lane_states"]


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import a name's module when it is first asked for (``laneway check`` needs no gateway)."""
