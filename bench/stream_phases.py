"""Where a streamed call's time to first token goes in laneway, phase by phase, at c=1.

    .venv/bin/python bench/stream_phases.py [--calls 250]

The ``laneway serve`` app (``build_gateway``) is served in this process on uvloop, as
``bench/_gateway_requests.py`` serves it, in front of ``bench/_stamp_upstream.py`` (CPU 1;
its first chunk 5 ms after its head), for a plain lane (no key, metrics, telemetry or
access log) and for every feature on (a key with an ``rpm``, SQLite telemetry, metrics, the
JSON access log). An aiohttp client in the same loop makes the calls one at a time, after
50 warm-up ones. ``time.perf_counter()`` stamps, taken by wrapping the protocol's
``data_received``, its transport's ``write`` and the upstream transport's ``stream()``, mark:
the request read, the upstream request begun, its head read, its first block read, the
response head written and the first chunk written. Each phase's median is printed, with
the caller's own time to first token. A probe, not a benchmark of throughput: the
wrappers cost a few µs each, the same in both rows.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _relay
import _stream_client
from _serving_entry import served
from laneway.core.transport import HttpRequest, HttpStream
from laneway.http.aiohttp import AiohttpTransport
from laneway.server.protocol import GatewayProtocol

PHASES = ("read", "upstream", "upstream head", "first block", "head", "first chunk")
WARM_UP = 50
Stamps = dict[str, float]


class StampedTransport:
    """A connection's transport whose writes stamp the response head and the first chunk."""

    def __init__(self, transport: Any, stamps: Stamps) -> None:
        self._transport, self._stamps = transport, stamps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def write(self, data: bytes) -> None:
        """Stamp, then write."""
        if "head" not in self._stamps:
            self._stamps["head"] = time.perf_counter()
        else:
            self._stamps.setdefault("first chunk", time.perf_counter())
        self._transport.write(data)


def stamp(stamps: Stamps) -> None:
    """Wrap the protocol and the upstream transport so each phase's end is stamped."""
    read, made = GatewayProtocol.data_received, GatewayProtocol.connection_made
    opened = AiohttpTransport.stream

    def data_received(self: GatewayProtocol, data: bytes) -> None:
        if data.startswith(b"POST"):
            stamps.clear()
            stamps["read"] = time.perf_counter()
        read(self, data)

    def connection_made(self: GatewayProtocol, transport: Any) -> None:
        made(self, StampedTransport(transport, stamps))  # type: ignore[arg-type]

    @asynccontextmanager
    async def stream(self: AiohttpTransport, request: HttpRequest) -> AsyncIterator[HttpStream]:
        stamps["upstream"] = time.perf_counter()
        async with opened(self, request) as answer:
            stamps["upstream head"] = time.perf_counter()
            yield StampedStream(answer, stamps)

    GatewayProtocol.data_received = data_received  # type: ignore[method-assign]
    GatewayProtocol.connection_made = connection_made  # type: ignore[method-assign]
    AiohttpTransport.stream = stream  # type: ignore[method-assign]


class StampedStream:
    """An upstream answer whose first block is stamped."""

    def __init__(self, answer: HttpStream, stamps: Stamps) -> None:
        self._answer, self._stamps = answer, stamps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._answer, name)

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        """The answer's blocks, the first stamped as it arrives."""
        async for block in self._answer.blocks():
            self._stamps.setdefault("first block", time.perf_counter())
            yield block


async def measure(config: Path, calls: int, stamps: Stamps, access_log: Any) -> list[str]:
    """The phases' medians (µs) and the caller's TTFT over ``calls`` streamed calls."""
    figures, body, kept = _stream_client.Paced(), _stream_client._body("paced"), []
    async with (
        served(config, access_log) as port,
        aiohttp.ClientSession(headers=setup.AUTH_HEADERS) as session,
    ):
        url = f"http://127.0.0.1:{port}{setup.PATH}"
        for number in range(WARM_UP + calls):
            await figures.one(session, url, body)
            if number >= WARM_UP and len(stamps) == len(PHASES):
                kept.append(dict(stamps))
    lines = [
        f"  {a} -> {b}: {statistics.median(s[b] - s[a] for s in kept) * 1e6:,.0f} µs"
        for a, b in itertools.pairwise(PHASES)
    ]
    ttft = statistics.median(figures.ttft[WARM_UP:]) * 1e3
    return [*lines, f"  caller's TTFT p50: {ttft:.2f} ms ({len(kept)} calls stamped)"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=250)
    args = parser.parse_args()
    stamps: Stamps = {}
    stamp(stamps)
    scratch = Path(tempfile.mkdtemp(prefix="stream-phases-"))
    with ExitStack() as stack:
        upstream = _relay.stamp_upstream(stack, 1, "--chunks", "3")
        lane = {"paced": setup.openai_lane(f"{upstream.url}/v1")}
        plain = {"lanes": lane, "server": {"host": "127.0.0.1", "metrics": False}}
        rows: list[tuple[str, dict[str, Any], Any]] = [
            ("plain lane", {**plain, "telemetry": {"url": "none"}}, None),
            ("every feature on", setup.feature_config(lane, scratch / "t.sqlite3"), "json"),
        ]
        run: Callable[..., Any] = uvloop.run
        for name, config, access_log in rows:
            path = setup.write_yaml(scratch / f"{name.replace(' ', '-')}.yaml", config)
            print(name)
            print("\n".join(run(measure(path, args.calls, stamps, access_log))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
