"""The gateway's builder and uvicorn's settings, found in the tree being measured.

The instruction-count drivers run every tree of an A/B with this checkout's
driver (``PYTHONPATH=TREE/src``), older commits included; before
``laneway.serving`` those two lived in ``laneway.cli.compose`` and
``laneway.server.run``.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from laneway.cli.serve import config_dir
from laneway.config.load import load_config
from laneway.server.prompt import PromptServer


def _entry(module: str, before: str, name: str) -> Any:
    """``name`` from ``module``, or from ``before`` in an older tree."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return getattr(importlib.import_module(before), name)


build_gateway = _entry("laneway.app.composer", "laneway.cli.compose", "build_gateway")
uvicorn_config = _entry("laneway.serving.settings", "laneway.server.run", "uvicorn_config")


@asynccontextmanager
async def served(path: Path, access_log: str | None) -> AsyncIterator[int]:
    """The ``laneway serve`` app of the config at ``path``, served in this event loop on a
    free loopback port (yielded) until the block ends."""
    config, environ = load_config(path)
    gateway = build_gateway(config, environ, config_dir(path), access_log=access_log)
    server = PromptServer(uvicorn_config(gateway, host="127.0.0.1", port=0, drain_timeout=1.0))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn has no event to wait on)
        await asyncio.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.stop()
        await serving
