"""How the gateway is served: one place for the uvicorn settings it is tuned for."""

from __future__ import annotations

import math
import resource
from typing import Any

from laneway.config.models import ServerConfig
from laneway.server.app import Gateway
from laneway.server.protocol import ConnectionLimits, GatewayProtocol, LimitedConfig
from laneway.serving.generations import ReloadingGateway

MAX_CONNECTIONS_CEILING = 4096
"""The default ``server.max_connections`` never exceeds this, whatever the fd limit."""
WORKER_HEALTHCHECK_TIMEOUT = 30
"""Seconds a ``--workers`` worker may take to answer the supervisor's ping. uvicorn's 5 s
kills a worker still importing on a busy host, again and again (seen at load 14 on 2 cores)."""
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_config(level: str = "INFO") -> dict[str, Any]:
    """``laneway serve``'s logging: every line, uvicorn's and laneway's, starts with its time.

    ``level`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``) applies to both; the
    access log (``server.access_log``) is written apart, one line per call.
    """
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"timed": {"format": LOG_FORMAT}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "timed",
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level, "propagate": False},
            "laneway": {"handlers": ["stderr"], "level": level, "propagate": False},
        },
    }


def connection_limits(server: ServerConfig, workers: int = 1) -> ConnectionLimits:
    """The ``server:`` limits for one of ``workers`` processes (each gets its share of the cap)."""
    return ConnectionLimits(
        header_timeout=server.header_timeout,
        body_timeout=server.body_timeout,
        keepalive_timeout=server.keepalive_timeout,
        max_header_bytes=server.max_header_bytes,
        max_headers=server.max_headers,
        max_connections=max(1, (server.max_connections or default_max_connections()) // workers),
    )


def default_max_connections() -> int:
    """Half the process's file-descriptor limit (the rest: upstreams, files), at most 4096."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS_CEILING
    return max(1, min(MAX_CONNECTIONS_CEILING, soft // 2))


def uvicorn_config(
    app: Gateway | ReloadingGateway | str,
    *,
    host: str,
    port: int,
    drain_timeout: float,
    workers: int = 1,
    limits: ConnectionLimits | None = None,
    log_config: dict[str, Any] | None = None,
) -> LimitedConfig:
    """uvicorn on uvloop and httptools (``GatewayProtocol``), lifespan on, no access log.

    No proxy-header rewriting (the gateway never reads client addresses) and
    no ``server`` header: both cost time on every request for nothing.

    ``app`` is a ``Gateway`` (or a ``ReloadingGateway`` over successive ones),
    or for ``workers`` > 1 the import string of a factory that builds one in
    each worker. SIGTERM stops accepting, lets calls
    in flight finish for up to ``drain_timeout`` (uvicorn counts whole seconds,
    so it is rounded up), then the lifespan shutdown closes the engine.
    ``limits`` are the per-process connection limits (defaults when ``None``);
    ``log_config`` replaces uvicorn's logging setup (``log_config()`` in
    ``laneway serve``; tests keep uvicorn's, which leaves the root logger alone).
    """
    extra = {} if log_config is None else {"log_config": log_config}
    return LimitedConfig(
        app,
        limits=limits or ConnectionLimits(),
        host=host,
        port=port,
        workers=workers,
        factory=isinstance(app, str),
        loop="uvloop",
        http=GatewayProtocol,
        ws="none",
        proxy_headers=False,
        server_header=False,
        lifespan="on",
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=math.ceil(drain_timeout),
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_TIMEOUT,
        **extra,
    )
