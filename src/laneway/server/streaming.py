"""Forwarding a ``ChatStream`` as server-sent events, in the caller's wire format.

A ``StreamEncoder`` writes the events: ``OpenAIEncoder`` here, Anthropic's and
the Responses API's beside their endpoints.

The response head waits for the engine's first chunk: until content flows the
engine may still retry, and a call that fails in that time gets a real HTTP
error status. Once the head is out, a failure can only be told in-band, as a
``data: {"error": ...}`` event, and the stream ends without ``[DONE]`` so no
client mistakes it for a complete answer.

Streams are never cached (``X-Laneway-Cache: bypass``) and carry no
``X-Laneway-Usage``: the head is sent before usage exists. A stream reports
usage only in its final usage chunk, when the caller asked for one
(``stream_options.include_usage``) and the upstream reported it; estimates
are recorded in telemetry, never sent in a stream.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from laneway.core.errors import LanewayError
from laneway.core.passthrough import OPENAI_CHAT
from laneway.core.types import ChatChunk
from laneway.engine.chain_stream import ChatStream
from laneway.server.asgi import Send
from laneway.server.errors import sse_error
from laneway.server.render import answer_headers
from laneway.wire.openai.chat_answer import completion_chunk_event

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # a buffering reverse proxy would hold the events back
]

log = logging.getLogger("laneway.server")


class StreamEncoder(Protocol):
    """Writes one stream's events in a wire format (it may keep state: open blocks, counts)."""

    def chunk(self, chunk: ChatChunk) -> bytes:
        """The events for one engine chunk (empty when it says nothing in this format)."""
        ...

    def end(self) -> bytes:
        """The events that close a complete stream."""
        ...

    def failed(self, exc: Exception, lane: str) -> bytes:
        """The in-band error event that ends a broken stream."""
        ...


class OpenAIEncoder:
    """OpenAI's chunks as the upstream sent them; the usage chunk only when asked for.

    Since it writes each event as it came, ``forward_stream`` relays an
    OpenAI-compatible source's events unparsed (``laneway.engine.relay``).
    """

    def __init__(self, include_usage: bool) -> None:
        self._include_usage = include_usage

    def chunk(self, chunk: ChatChunk) -> bytes:
        """The chunk as one ``data:`` event."""
        raw = chunk.raw
        if raw is None or (
            not self._include_usage and chunk.usage is not None and not raw.get("choices")
        ):
            return b""
        return completion_chunk_event(raw)

    def end(self) -> bytes:
        """``[DONE]``."""
        return DONE

    def failed(self, exc: Exception, lane: str) -> bytes:
        """A ``data: {"error": ...}`` event (no ``[DONE]`` follows)."""
        return sse_error(exc, lane)


async def forward_stream(
    stream: ChatStream,
    send: Send,
    encoder: StreamEncoder,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> bytes:
    """Send the head (with ``extra`` headers) and every piece; return the closing events, unsent.

    Errors before the first chunk propagate (no head was sent). The closing
    events, the encoder's end or its in-band error, are returned so the caller
    can stop watching for a disconnect before it completes the response. An
    ``OpenAIEncoder`` writes each event as the source sent it, so a source of
    the same wire format is relayed: a network read's events in one send.
    """
    wire = OPENAI_CHAT if isinstance(encoder, OpenAIEncoder) else None
    pieces = stream.relay(encoder.chunk, wire)
    first = await anext(pieces, None)
    headers = answer_headers(stream.lane.name, stream.source, len(stream.attempts), "bypass", None)
    head = [*SSE_HEADERS, *headers, *extra]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    try:
        if first:
            await send({"type": "http.response.body", "body": first, "more_body": True})
        async for piece in pieces:
            if piece:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
    except Exception as exc:
        if not isinstance(exc, LanewayError):
            log.exception("stream on lane %s failed after its head was sent", stream.lane.name)
        return encoder.failed(exc, stream.lane.name)
    return encoder.end()
