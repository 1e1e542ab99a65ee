"""ASGI plumbing of the gateway: message types, bounded body reading, replies.

The gateway is a raw ASGI application (no framework), so this module is the
whole of its HTTP vocabulary. Headers are ``(lower-case name, value)`` byte
pairs, as ASGI servers deliver and expect them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

JSON = b"application/json"


class ClientGone(Exception):
    """The client disconnected; nothing can be sent to it any more."""


class BodyTooLarge(Exception):
    """The request body is longer than ``server.max_request_bytes``."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A complete answer: status, body and the headers beyond the content ones."""

    status: int
    body: bytes
    headers: Headers
    content_type: bytes = JSON


async def read_body(receive: Receive, limit: int) -> bytes:
    """Read the whole request body, refusing it as soon as it passes ``limit`` bytes.

    Counting while reading covers bodies sent without (or with a false)
    Content-Length; the caller checks the declared length before calling.
    """
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    body: bytes = message.get("body", b"")
    if len(body) > limit:
        raise BodyTooLarge
    if not message.get("more_body", False):
        return body
    parts, size = [body], len(body)
    while message.get("more_body", False):
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        parts.append(chunk)
    return b"".join(parts)


async def send_reply(send: Send, reply: Reply) -> None:
    """Send ``reply`` as one response (JSON unless it names another content type)."""
    length = (b"content-length", str(len(reply.body)).encode())
    content_type = (b"content-type", reply.content_type)
    await send(
        {
            "type": "http.response.start",
            "status": reply.status,
            "headers": [*reply.headers, content_type, length],
        }
    )
    await send({"type": "http.response.body", "body": reply.body})
