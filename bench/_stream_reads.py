"""Streams through the gateway's stream path with a fake upstream, for instructions per read.

    python bench/_stream_reads.py READS EVENTS

The ``Gateway`` of a one-lane config (an OpenAI source with a key, so the
redacting transport is on) is called in process, on uvloop, 20 times; each
streamed answer is an opening read, ``READS`` reads of ``EVENTS`` content
events (a turn of the loop before each, as a network read takes) and a
closing read. No socket and no client: run under ``valgrind
--tool=callgrind`` with two ``READS`` (``stream_read_instructions.sh``), the
difference of the totals over the difference of the reads is what one read
costs the gateway's stream path (the relay, the recording around it, the
ASGI send), the loop's turn included. A tree from before ``HttpStream.blocks``
reads the same answer by ``lines``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import orjson
import uvloop

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream

_ENVELOPE = b'"object":"chat.completion.chunk","created":1700000000,"model":"m","choices"'
EVENT = (
    b'data: {"id":"c",'
    + _ENVELOPE
    + b':[{"index":0,"delta":{"content":" w"},"finish_reason":null}]}\n\n'
)
OPENING = EVENT.replace(b'"content":" w"', b'"role":"assistant","content":"x"')
CLOSING = EVENT.replace(b'{"content":" w"},"finish_reason":null', b'{},"finish_reason":"stop"')
CLOSING += b"data: [DONE]\n\n"
STREAMS = 20
CONFIG = {
    "lanes": {
        "chat": {
            "sources": [
                {
                    "provider": "openai",
                    "base_url": "http://u/v1",
                    "model": "m",
                    "api_key": "sk-0123456789",
                }
            ]
        }
    }
}


class _Answer:
    status = 200
    headers: Mapping[str, str] = {"content-type": "text/event-stream"}

    def __init__(self, reads: int, events: int) -> None:
        self._reads, self._read = reads, EVENT * events

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        yield OPENING
        for _ in range(self._reads):
            await asyncio.sleep(0)
            yield self._read
        yield CLOSING

    async def lines(self) -> AsyncIterator[bytes]:
        """The same answer line by line (what a tree before ``blocks`` reads)."""
        async for block in self.blocks():
            for line in block.split(b"\n")[:-1]:
                yield line

    async def read(self) -> bytes:
        return b""


class _Upstream:
    def __init__(self, reads: int, events: int) -> None:
        self._reads, self._events = reads, events

    async def send(self, request: HttpRequest) -> HttpResponse:
        raise AssertionError("only streams")

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        yield _Answer(self._reads, self._events)

    async def aclose(self) -> None:
        return None


async def main(reads: int, events: int) -> None:
    config = LanewayConfig.model_validate(CONFIG)
    engine = build_engine(config, {}, transport=_Upstream(reads, events))
    gateway = gateway_over(config, engine, {})
    body = orjson.dumps(
        {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    )
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"content-length", str(len(body)).encode()), (b"host", b"127.0.0.1")],
    }
    for _ in range(STREAMS):
        asked = False

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if asked:
                await asyncio.sleep(3600)
            asked = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: Mapping[str, Any]) -> None:
            return None

        await gateway(scope, receive, send)
    await engine.aclose()


if __name__ == "__main__":
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main(int(sys.argv[1]), int(sys.argv[2])))
