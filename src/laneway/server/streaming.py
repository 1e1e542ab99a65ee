"""Forwarding a ``ChatStream`` as server-sent events.

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

import orjson

from laneway.core.errors import LanewayError
from laneway.core.types import ChatChunk
from laneway.engine.stream import ChatStream
from laneway.server.asgi import Send
from laneway.server.errors import sse_error
from laneway.server.render import answer_headers

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # a buffering reverse proxy would hold the events back
]

log = logging.getLogger("laneway.server")


async def forward_stream(stream: ChatStream, send: Send, include_usage: bool) -> bytes:
    """Send the head and every chunk; return the closing event, still unsent.

    Errors before the first chunk propagate (no head was sent). The closing
    event, ``[DONE]`` or an in-band error, is returned so the caller can stop
    watching for a disconnect before it completes the response.
    """
    chunks = aiter(stream)
    first = await anext(chunks, None)
    headers = answer_headers(stream.lane.name, stream.source, len(stream.attempts), "bypass", None)
    head = [*SSE_HEADERS, *headers]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    try:
        if first is not None:
            await _send_chunk(send, first, include_usage)
        async for chunk in chunks:
            await _send_chunk(send, chunk, include_usage)
    except Exception as exc:
        if not isinstance(exc, LanewayError):
            log.exception("stream on lane %s failed after its head was sent", stream.lane.name)
        return sse_error(exc, stream.lane.name)
    return DONE


async def _send_chunk(send: Send, chunk: ChatChunk, include_usage: bool) -> None:
    raw = chunk.raw
    if raw is None or (not include_usage and chunk.usage is not None and not raw.get("choices")):
        return
    event = b"data: " + orjson.dumps(raw) + b"\n\n"
    await send({"type": "http.response.body", "body": event, "more_body": True})
