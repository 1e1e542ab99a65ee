"""A counting OpenAI upstream for relay benchmarks: stamped streams, big embeddings, hit log.

Raw asyncio (no framework), so the upstream costs little beside the gateway under test:

- ``POST {prefix}/v1/chat/completions`` with ``"stream": true``: ``--chunks`` SSE
  chunks ``--interval-ms`` apart (``/fast`` prefix: back to back; ``/burst`` prefix: the
  whole answer in one write, so how the relay's reads cut it does not hang on timing), each chunk's
  ``content`` the ``time.monotonic()`` at which it was written (CLOCK_MONOTONIC is one
  clock for every process of the host, so a client can subtract it from its own
  reading); then a usage chunk and ``[DONE]``. Without ``stream``: one small completion.
- ``POST {prefix}/v1/embeddings``: ``--vectors`` × ``--dims`` vectors, as floats or, when
  asked, base64 (bodies built once at start).
- ``GET /stats``: chat requests served (with the monotonic time of each), and the
  monotonic time of every connection that closed mid-stream, for disconnect checks.

    python bench/_stamp_upstream.py PORT [--chunks 200] [--interval-ms 5]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import struct
import time

_FIXED = (
    b'{"id":"chatcmpl-u","object":"chat.completion","created":1700000000,"model":"m",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},'
    b'"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,'
    b'"total_tokens":7}}'
)
_CHUNK = (
    b'data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000000,'
    b'"model":"m","choices":[{"index":0,"delta":{"content":"%.6f"},"finish_reason":null}]}\n\n'
)
_CLOSING = (
    b'data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000000,'
    b'"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1700000000,'
    b'"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":200,'
    b'"total_tokens":205}}\n\ndata: [DONE]\n\n'
)
_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


def _answer(body: bytes, content_type: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s" % (
        content_type,
        len(body),
        body,
    )


def embedding_bodies(vectors: int, dims: int) -> dict[str, bytes]:
    """The float and base64 answers, built once (random floats, fixed seed)."""
    rng = random.Random(7)
    floats = [[rng.uniform(-0.1, 0.1) for _ in range(dims)] for _ in range(vectors)]
    usage = {"prompt_tokens": vectors * 8, "total_tokens": vectors * 8}

    def body(encode: object) -> bytes:
        data = [
            {"object": "embedding", "index": i, "embedding": encode(v)}  # type: ignore[operator]
            for i, v in enumerate(floats)
        ]
        answer = {"object": "list", "data": data, "model": "e", "usage": usage}
        return json.dumps(answer, separators=(",", ":")).encode()

    def b64(vector: list[float]) -> str:
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()

    return {"float": body(lambda v: v), "base64": body(b64)}


class Stats:
    """What the upstream saw: chat requests (monotonic times) and mid-stream closes."""

    def __init__(self) -> None:
        self.chat_times: list[float] = []
        self.cut_streams: list[float] = []
        self.open_streams = 0

    def body(self) -> bytes:
        return json.dumps(
            {
                "chat_times": self.chat_times,
                "cut_streams": self.cut_streams,
                "open_streams": self.open_streams,
            }
        ).encode()


class Upstream(asyncio.Protocol):
    """One connection: parse requests (keep-alive), answer them, stream with pacing."""

    def __init__(self, args: argparse.Namespace, stats: Stats, embeds: dict[str, bytes]) -> None:
        self.args, self.stats, self.embeds = args, stats, embeds
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.streaming: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if self.streaming is not None and not self.streaming.done():
            self.stats.cut_streams.append(time.monotonic())
            self.streaming.cancel()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(self.buffer) < end:
                return
            body, self.buffer = self.buffer[head_end + 4 : end], self.buffer[end:]
            self.handle(head.split(" ", 2)[:2], body)

    def handle(self, request_line: list[str], body: bytes) -> None:
        assert self.transport is not None
        method, path = request_line
        if method == "GET" and path == "/stats":
            self.transport.write(_answer(self.stats.body()))
        elif path.endswith("/embeddings"):
            form = "base64" if b'"base64"' in body else "float"
            self.transport.write(_answer(self.embeds[form]))
        elif path.endswith("/chat/completions"):
            self.stats.chat_times.append(time.monotonic())
            if b'"stream":true' in body.replace(b" ", b""):
                if path.startswith("/burst/"):
                    self.burst()
                    return
                fast = path.startswith("/fast/")
                self.streaming = asyncio.ensure_future(self.stream(0.0 if fast else None))
            else:
                self.transport.write(_answer(_FIXED))
        else:
            self.transport.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")

    def burst(self) -> None:
        """The stamped chunks and the closing events in one chunked-encoding write."""
        assert self.transport is not None
        events = b"".join(_CHUNK % time.monotonic() for _ in range(self.args.chunks)) + _CLOSING
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(events), events)
        self.transport.write(_SSE_HEAD + body)

    async def stream(self, interval: float | None) -> None:
        """The stamped chunks; a transport closed under it ends the task (counted above)."""
        assert self.transport is not None
        pause = self.args.interval_ms / 1000 if interval is None else interval
        self.stats.open_streams += 1
        try:
            self.transport.write(_SSE_HEAD)
            for _ in range(self.args.chunks):
                if pause:
                    await asyncio.sleep(pause)
                elif self.transport.get_write_buffer_size() > 65536:
                    await asyncio.sleep(0.001)  # let a slow reader drain before writing more
                if self.transport.is_closing():
                    return
                event = _CHUNK % time.monotonic()
                self.transport.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.transport.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(_CLOSING), _CLOSING))
        finally:
            self.stats.open_streams -= 1


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    parser.add_argument("--vectors", type=int, default=64)
    parser.add_argument("--dims", type=int, default=1536)
    args = parser.parse_args()
    stats, embeds = Stats(), embedding_bodies(args.vectors, args.dims)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Upstream(args, stats, embeds), "127.0.0.1", args.port, backlog=4096
    )
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
