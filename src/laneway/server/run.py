"""How the gateway is served: one place for the uvicorn settings it is tuned for."""

from __future__ import annotations

import math

import uvicorn

from laneway.server.app import Gateway
from laneway.server.protocol import GatewayProtocol


def uvicorn_config(
    app: Gateway | str,
    *,
    host: str,
    port: int,
    drain_timeout: float,
    workers: int = 1,
) -> uvicorn.Config:
    """uvicorn on uvloop and httptools (``GatewayProtocol``), lifespan on, no access log.

    No proxy-header rewriting (the gateway never reads client addresses) and
    no ``server`` header: both cost time on every request for nothing.

    ``app`` is a ``Gateway``, or for ``workers`` > 1 the import string of a
    factory that builds one in each worker. SIGTERM stops accepting, lets calls
    in flight finish for up to ``drain_timeout`` (uvicorn counts whole seconds,
    so it is rounded up), then the lifespan shutdown closes the engine.
    """
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        workers=workers,
        factory=isinstance(app, str),
        loop="uvloop",
        http=GatewayProtocol,
        proxy_headers=False,
        server_header=False,
        lifespan="on",
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=math.ceil(drain_timeout),
    )
