"""Streaming load client for ``bench/streaming.py``: one process, pinned by its caller.

Modes (one JSON line on stdout):

- ``paced URL MODEL C SECONDS``: C workers each open streams one after another for
  SECONDS; per stream the time to first token (request sent → first content chunk
  read) and, per chunk, the relay delay: the monotonic time the client read it minus
  the upstream's write time stamped in its content (one host, one CLOCK_MONOTONIC).
- ``fast URL MODEL C SECONDS``: the same against unpaced streams, counting events only:
  relayed chunks per second when the relay, not the upstream's pacing, is the limit.
- ``disconnect URL MODEL N``: N streams one at a time, each closed by the client after
  ten chunks; prints the monotonic time of each close (the upstream logs its side).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time

import aiohttp
import uvloop

_STAMP = re.compile(rb'"content":"(\d+\.\d+)"')


def _body(model: str) -> bytes:
    messages = [{"role": "user", "content": "Tell me a story."}]
    return json.dumps({"model": model, "messages": messages, "stream": True}).encode()


class Paced:
    """Figures of paced streams: TTFT per stream, relay delay per chunk."""

    def __init__(self) -> None:
        self.ttft: list[float] = []
        self.delays: list[float] = []
        self.chunks = 0
        self.failed = 0

    async def one(self, session: aiohttp.ClientSession, url: str, body: bytes) -> None:
        sent = time.monotonic()
        first = True
        buffer = b""
        async with session.post(url, data=body, headers=_HEADERS) as response:
            if response.status != 200:
                self.failed += 1
                await response.read()
                return
            async for data in response.content.iter_any():
                now = time.monotonic()
                buffer += data
                events, _, buffer = buffer.rpartition(b"\n\n")
                for stamp in _STAMP.findall(events):
                    if first:
                        self.ttft.append(now - sent)
                        first = False
                    self.delays.append(now - float(stamp))
                    self.chunks += 1


_HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-0123456789abcdef"}


async def paced(url: str, model: str, concurrency: int, seconds: float) -> dict[str, object]:
    figures = Paced()
    body = _body(model)
    end = time.monotonic() + seconds
    async with _session(concurrency) as session:

        async def worker() -> None:
            while time.monotonic() < end:
                await figures.one(session, url, body)

        began = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.monotonic() - began
    return {
        "ttft_p50": _pct(figures.ttft, 50),
        "delay_p50": _pct(figures.delays, 50),
        "delay_p99": _pct(figures.delays, 99),
        "chunks": figures.chunks,
        "wall": wall,
        "failed": figures.failed,
    }


async def fast(url: str, model: str, concurrency: int, seconds: float) -> dict[str, object]:
    body = _body(model)
    end = time.monotonic() + seconds
    counted = [0, 0]  # events, failed streams

    async def worker(session: aiohttp.ClientSession) -> None:
        while time.monotonic() < end:
            async with session.post(url, data=body, headers=_HEADERS) as response:
                if response.status != 200:
                    counted[1] += 1
                async for data in response.content.iter_any():
                    counted[0] += data.count(b"\n\n")

    async with _session(concurrency) as session:
        began = time.monotonic()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        wall = time.monotonic() - began
    return {"events": counted[0], "wall": wall, "failed": counted[1]}


async def disconnect(url: str, model: str, trials: int) -> dict[str, object]:
    body = _body(model)
    closes: list[float] = []
    async with _session(1) as session:
        for _ in range(trials):
            response = await session.post(url, data=body, headers=_HEADERS)
            seen = 0
            async for data in response.content.iter_any():
                seen += data.count(b"\n\n")
                if seen >= 10:
                    break
            closes.append(time.monotonic())
            response.close()  # mid-body: the connection is closed, not pooled
            await asyncio.sleep(0.2)
    return {"closes": closes}


def _pct(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (a few hundred thousand delays: no interpolation needed)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _session(concurrency: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=concurrency)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60))


def main() -> None:
    mode, url, model = sys.argv[1:4]
    if mode == "disconnect":
        result = uvloop.run(disconnect(url, model, int(sys.argv[4])))
    else:
        run = paced if mode == "paced" else fast
        result = uvloop.run(run(url, model, int(sys.argv[4]), float(sys.argv[5])))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
