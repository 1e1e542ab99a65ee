"""Server layer: ``laneway serve``, the OpenAI-compatible gateway (raw ASGI).

Depends on ``laneway.engine`` and below. It receives a built ``Engine`` and
never imports ``laneway.http`` or ``aiohttp``: only ``laneway.cli`` composes
transports, engines and servers. Never imports ``laneway.client`` either.
"""

from laneway.server.app import Gateway
from laneway.server.health import LaneState, lane_states
from laneway.server.keys import KeyRing
from laneway.server.run import uvicorn_config

__all__ = ["Gateway", "KeyRing", "LaneState", "lane_states", "uvicorn_config"]
