"""The chat wire formats callers speak: each is read into one ``ChatRequest``.

OpenAI's chat completions, Anthropic's Messages API and OpenAI's Responses
API reach the same engine call on the same lane, whatever the lane's sources
speak: a ``Dialect`` reads its body into an ``InboundChat`` (the request, and
how to write the answer back in the caller's format) and renders errors in
that format's shape. The shapes are ``laneway.wire``'s; a dialect binds them
to the server's errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from laneway.core.types import ChatRequest, LLMResponse
from laneway.server.asgi import Reply
from laneway.server.errors import Refused, error_reply, internal_error_reply
from laneway.server.streaming import OpenAIEncoder, StreamEncoder
from laneway.wire.blocks import MalformedAnswer
from laneway.wire.openai.chat_answer import completion_body
from laneway.wire.openai.chat_request import chat_call

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


def refusing_malformed(write: Callable[[LLMResponse], bytes]) -> Callable[[LLMResponse], bytes]:
    """``write``, with an answer its wire format cannot write back answered as a 502."""

    def body(result: LLMResponse) -> bytes:
        try:
            return write(result)
        except MalformedAnswer as exc:
            raise Refused(502, "upstream_malformed", str(exc)) from exc

    return body


def _openai_chat(data: dict[str, Any], forwarded: Forwarded) -> InboundChat:
    call = chat_call(data, forwarded)
    include_usage = call.include_usage
    return InboundChat(
        call.request, call.stream, completion_body, lambda: OpenAIEncoder(include_usage)
    )


OPENAI_CHAT = Dialect(_openai_chat, error_reply, internal_error_reply)
"""``POST /v1/chat/completions``: passed through in OpenAI's own shape."""
