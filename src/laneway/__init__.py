"""laneway: an LLM gateway and client library with explicit, enforced policies.

``Laneway.from_config("laneway.yaml")`` gives the library; ``laneway serve``
the OpenAI-compatible gateway. Errors are in ``laneway.errors``.

The names below are imported on first use: every ``laneway.*`` import runs
this file first, and ``laneway serve`` has no use for the library facade.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from laneway.client import Laneway, gather_bounded
    from laneway.core.types import (
        Attempt,
        ChatChunk,
        EmbeddingResponse,
        LLMResponse,
        Reasoning,
        Usage,
    )
    from laneway.engine.chain_stream import ChatStream

_LAZY = {
    "Attempt": "laneway.core.types",
    "ChatChunk": "laneway.core.types",
    "ChatStream": "laneway.engine.chain_stream",
    "EmbeddingResponse": "laneway.core.types",
    "LLMResponse": "laneway.core.types",
    "Laneway": "laneway.client",
    "Reasoning": "laneway.core.types",
    "Usage": "laneway.core.types",
    "gather_bounded": "laneway.client",
}

__all__ = [
    "Attempt",
    "ChatChunk",
    "ChatStream",
    "EmbeddingResponse",
    "LLMResponse",
    "Laneway",
    "Reasoning",
    "Usage",
    "gather_bounded",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import the public names on first use (see the module docstring)."""
