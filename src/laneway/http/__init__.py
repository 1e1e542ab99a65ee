"""Transport adapters for the HTTP port of ``laneway.core.transport``.

Depends on ``laneway.core`` only.
"""

from laneway.http.aiohttp import AiohttpTransport
from laneway.http.mock import MockTransport

__all__ = ["AiohttpTransport", "MockTransport"]
