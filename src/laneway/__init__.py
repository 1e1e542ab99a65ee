"""laneway: an LLM gateway and client library with explicit, enforced policies.

``Laneway.from_config("laneway.yaml")`` gives the library; ``laneway serve``
the OpenAI-compatible gateway. Errors are in ``laneway.errors``.
"""

from laneway.client import Laneway, gather_bounded
from laneway.core.types import (
    Attempt,
    ChatChunk,
    EmbeddingResponse,
    LLMResponse,
    Reasoning,
    Usage,
)
from laneway.engine.stream import ChatStream

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
