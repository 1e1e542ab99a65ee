"""The gateway's builder and uvicorn's settings, found in the tree being measured.

The instruction-count drivers run every tree of an A/B with this checkout's
driver (``PYTHONPATH=TREE/src``), older commits included; before
``laneway.serving`` those two lived in ``laneway.cli.compose`` and
``laneway.server.run``.
"""

from __future__ import annotations

import importlib
from typing import Any


def _entry(module: str, before: str, name: str) -> Any:
    """``name`` from ``module``, or from ``before`` in an older tree."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return getattr(importlib.import_module(before), name)


build_gateway = _entry("laneway.app.composer", "laneway.cli.compose", "build_gateway")
uvicorn_config = _entry("laneway.serving.settings", "laneway.server.run", "uvicorn_config")
