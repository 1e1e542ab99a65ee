"""The chat wire formats callers speak: each is read into one ``ChatRequest``.

OpenAI's chat completions, Anthropic's Messages API and OpenAI's Responses
API reach the same engine call on the same lane, whatever the lane's sources
speak: a ``Dialect`` reads its body into an ``InboundChat`` (the request, and
how to write the answer back in the caller's format) and renders errors in
that format's shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from laneway.core.types import ChatRequest, LLMResponse
from laneway.server.asgi import Reply
from laneway.server.errors import error_reply, internal_error_reply
from laneway.server.parse import chat_call
from laneway.server.render import chat_body
from laneway.server.streaming import OpenAIEncoder, StreamEncoder

Forwarded = Mapping[str, str]
"""The caller's headers to send upstream (``X-Request-Id``, ``OpenAI-Organization``...)."""


@dataclass(frozen=True, slots=True)
class InboundChat:
    """A chat call read from one wire format, and how to answer it in that format."""

    request: ChatRequest
    stream: bool
    body: Callable[[LLMResponse], bytes]
    """The complete answer's body."""
    encoder: Callable[[], StreamEncoder]
    """A fresh encoder for the streamed answer."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """One chat wire format: its reader and its error shapes."""

    read: Callable[[dict[str, Any], Forwarded], InboundChat]
    """Validate a body (its ``model`` already checked) into a call; consumes the body."""
    error: Callable[[Exception, str], Reply]
    """The error answer for an exception, given the lane named (or ``""``)."""
    crash: Callable[[str, str], Reply]
    """The 500 for an unexpected exception, given the lane and the request id."""


def _openai_chat(data: dict[str, Any], forwarded: Forwarded) -> InboundChat:
    call = chat_call(data, forwarded)
    include_usage = call.include_usage
    return InboundChat(call.request, call.stream, chat_body, lambda: OpenAIEncoder(include_usage))


OPENAI_CHAT = Dialect(_openai_chat, error_reply, internal_error_reply)
"""``POST /v1/chat/completions``: passed through in OpenAI's own shape."""
