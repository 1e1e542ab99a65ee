"""Bodies that cross the gateway as they came, when the caller and the source speak one format.

The pass-through fast path: a source's answer goes back to a caller of its
wire format as it came (``AnswerBody``), once read (and so checked) for its
usage, model and finish reason; a feature that needs the answer rewritten (an
estimated usage, a ``usage: null`` to drop) renders it from the parsed answer
instead, on that call only. A caller's request goes to a source of its format
as it was sent, only its ``model`` changed (``CallerBody``), instead of
through laneway's neutral form, when the translation would lose something.
The request is written with orjson from the body as parsed: measured,
rewriting the model inside the caller's bytes cost more than writing the
whole body again (a search of every byte for other ``model`` keys, ~3.5
instructions a byte, against orjson's ~1.8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from laneway.core.messages import ChatMessage

if TYPE_CHECKING:
    from laneway.core.types import ChatRequest

OPENAI_CHAT = "openai.chat"
"""OpenAI's chat completions (``/v1/chat/completions``, the ``openai`` and ``azure`` sources)."""
ANTHROPIC_MESSAGES = "anthropic.messages"
"""Anthropic's Messages API (``/v1/messages``, the ``anthropic`` sources)."""
OPENAI_EMBEDDINGS = "openai.embeddings"
"""OpenAI's embeddings (``/v1/embeddings``, the ``openai`` and ``azure`` sources)."""


@dataclass(frozen=True, slots=True)
class CallerBody:
    """A caller's request body as it was sent (``fields``, as parsed), in its wire format.

    ``messages`` and ``params`` are the very objects the request was read
    into: a request derived from it (other messages, other parameters: a
    re-ask, a continuation) holds other objects, and ``holds`` then refuses
    it, so its body is written afresh, never taken from here.
    """

    wire: str
    fields: dict[str, Any]
    messages: list[ChatMessage]
    params: dict[str, Any]

    def holds(self, request: ChatRequest) -> bool:
        """Whether ``request`` is the one this body was read into."""
        return request.messages is self.messages and request.params is self.params


@dataclass(frozen=True, slots=True)
class AnswerBody:
    """A source's answer body as it came, in its wire format (``wire``)."""

    wire: str
    body: bytes
