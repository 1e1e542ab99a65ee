"""Calling the gateway's ASGI entry point in-process: no socket, one request at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from laneway.server import Gateway
from laneway.server.asgi import Message


@dataclass
class Answer:
    """What the gateway sent: status, headers and the body's bytes."""

    status: int = 0
    headers: dict[bytes, bytes] = field(default_factory=dict)
    body: bytes = b""


async def call(
    gateway: Gateway,
    method: str,
    path: str,
    body: bytes = b"",
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> Answer:
    """Send one request through ``gateway`` and collect its answer."""
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(b"content-length", str(len(body)).encode()), *headers],
    }
    delivered = False
    answer = Answer()

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()  # the client stays connected
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = dict(message.get("headers", []))
        else:
            answer.body += message.get("body", b"")

    await gateway(scope, receive, send)
    return answer
