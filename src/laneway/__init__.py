"""laneway: an LLM gateway and client library with explicit, enforced policies.

``Laneway.from_config("laneway.yaml")`` gives the library; ``laneway serve``
(or ``python -m laneway serve``) the OpenAI-compatible gateway. Every error is
in ``laneway.errors`` and, like every type a call returns, here too.

The names below are imported on first use: every ``laneway.*`` import runs
this file first, and ``laneway serve`` has no use for the library facade, the
configuration models or the error tree until it needs them. ``__all__`` is
the public surface; ``tests/unit/test_public_surface.py`` pins it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from laneway import errors as errors
    from laneway.client import Laneway
    from laneway.config.models import LanewayConfig
    from laneway.core.messages import ChatMessage
    from laneway.core.types import (
        Attempt,
        ChatChunk,
        EmbeddingResponse,
        LLMResponse,
        OCRResponse,
        Reasoning,
        Usage,
    )
    from laneway.engine.bounded import gather_bounded
    from laneway.engine.chain_stream import ChatStream
    from laneway.engine.structured import StructuredResponse
    from laneway.errors import (
        BatchStopped,
        CacheUnavailable,
        CallFailed,
        ConfigError,
        ContextLengthExceeded,
        DeadlineExceeded,
        DimensionMismatch,
        JobMismatch,
        LaneNotReady,
        LanewayError,
        PushbackRefused,
        RequestInvalid,
        RequestTooLarge,
        ResponseTooLarge,
        ResultInvalid,
        Stalled,
        StreamInterrupted,
        TelemetryError,
        UnknownLane,
        UpstreamFailed,
        UpstreamRejected,
        UpstreamTimeout,
    )

_HOMES = {
    "Attempt": "laneway.core.types",
    "ChatChunk": "laneway.core.types",
    "ChatMessage": "laneway.core.messages",
    "ChatStream": "laneway.engine.chain_stream",
    "EmbeddingResponse": "laneway.core.types",
    "LLMResponse": "laneway.core.types",
    "Laneway": "laneway.client",
    "LanewayConfig": "laneway.config.models",
    "OCRResponse": "laneway.core.types",
    "Reasoning": "laneway.core.types",
    "StructuredResponse": "laneway.engine.structured",
    "Usage": "laneway.core.types",
    "gather_bounded": "laneway.engine.bounded",
}
"""Where each public name that is not an error lives; the errors come from ``laneway.errors``."""

__all__ = [
    "Attempt",
    "BatchStopped",
    "CacheUnavailable",
    "CallFailed",
    "ChatChunk",
    "ChatMessage",
    "ChatStream",
    "ConfigError",
    "ContextLengthExceeded",
    "DeadlineExceeded",
    "DimensionMismatch",
    "EmbeddingResponse",
    "JobMismatch",
    "LLMResponse",
    "LaneNotReady",
    "Laneway",
    "LanewayConfig",
    "LanewayError",
    "OCRResponse",
    "PushbackRefused",
    "Reasoning",
    "RequestInvalid",
    "RequestTooLarge",
    "ResponseTooLarge",
    "ResultInvalid",
    "Stalled",
    "StreamInterrupted",
    "StructuredResponse",
    "TelemetryError",
    "UnknownLane",
    "UpstreamFailed",
    "UpstreamRejected",
    "UpstreamTimeout",
    "Usage",
    "gather_bounded",
]


__getattr__ = lazy_attributes(
    __name__, {name: _HOMES.get(name, "laneway.errors") for name in __all__}, submodules=("errors",)
)
"""Import the public names, and ``laneway.errors``, on first use (see the module docstring)."""


def __dir__() -> list[str]:
    """The module's names, the not yet imported public ones included."""
    return sorted({*globals(), *__all__, "errors"})
