"""The floor of laneway's own stack: uvicorn + httptools + uvloop, forwarding via aiohttp.

A raw ASGI app that reads the body, POSTs it unchanged to the same path on the upstream
on one pooled aiohttp session (the same connector settings as ``laneway.http.aiohttp``),
and returns the answer; a server-sent event stream is relayed as its bytes arrive.
No parsing, no lanes, no policy: whatever ``laneway serve`` costs beyond this row is
laneway's own code; what this row costs is the price of the chosen stack.

    python bench/_bare_proxy.py PORT UPSTREAM_URL
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp
import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = {"content-type": "application/json"}


class BareProxy:
    """ASGI app forwarding every request's body to the same path on ``upstream``."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._forward(scope["path"], receive, send)

    async def _forward(self, path: str, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        url = self.upstream + path
        async with self._client().post(url, data=body, headers=_JSON) as response:
            if response.content_type == "text/event-stream":
                await _relay(response, send)
                return
            data = await response.read()
            status = response.status
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def _client(self) -> aiohttp.ClientSession:
        """Created in the running loop, like laneway's transport, with its connector settings."""
        if self.session is None:
            connector = aiohttp.TCPConnector(limit=1000, keepalive_timeout=30.0)
            self.session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=None),
                skip_auto_headers=("User-Agent",),
            )
        return self.session

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.session is not None:
                    await self.session.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _relay(response: aiohttp.ClientResponse, send: Send) -> None:
    """Pass a stream's bytes on as they arrive (no parsing: the floor of a stream relay)."""
    head = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": response.status, "headers": head})
    async for data in response.content.iter_any():
        await send({"type": "http.response.body", "body": data, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


def main() -> None:
    """Serve with the uvicorn settings ``laneway serve`` uses (``laneway.serving.settings``)."""
    port, upstream = int(sys.argv[1]), sys.argv[2]
    uvicorn.run(
        BareProxy(upstream),
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
