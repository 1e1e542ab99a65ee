"""A fixed number of ``lw.chat()`` calls, for instruction counts (``engine_instructions.sh``).

    python bench/_engine_calls.py BASE_URL|mock CONCURRENCY CALLS [LANE]

LANE is ``one`` (the default: ``_engine_load.laneway_client``, the engine
overhead benchmark's one-source lane), ``two`` (that lane with two sources,
both on the same upstream, and a 30 s attempt timeout) or ``hedged`` (``two``
with ``hedge: {after: 20s, max_share: 1.0}``, a hedge that never fires: the
upstream answers in microseconds). ``hedged`` minus ``two`` is what an unused
hedge costs a call. ``mock`` instead of a URL answers in process (no socket,
no turn of the event loop waiting for one), so the count repeats to the
instruction: the engine's own work. The client runs from whatever ``laneway``
is on ``PYTHONPATH``, so two trees are measured by the same driver. 50 warm-up
calls come first. Run under ``valgrind --tool=callgrind`` twice with different
``CALLS``: the difference of the totals over the difference of the calls is
the instructions of one call, start-up and warm-up cancelled out. Instruction
counts repeat on a busy machine, where wall-clock figures do not.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from _engine_load import MESSAGES, engine_lane, laneway_client

Client = tuple[Callable[[], Awaitable[Any]], Callable[[], Awaitable[None]]]


def lane_settings(base_url: str, lane: str) -> dict[str, Any]:
    """``one``: the engine benchmark's lane; ``two``: it on two sources with a 30 s attempt
    timeout; ``hedged``: ``two`` with a hedge that never fires (``after: 20s``)."""
    if lane == "one":
        return engine_lane(base_url)
    if lane not in ("two", "hedged"):
        raise SystemExit(f"unknown lane {lane!r}: one, two or hedged")
    settings = engine_lane(base_url)
    source = settings["sources"][0]
    second = {**source, "name": "second", "priority": 1}
    settings.update(deadline="60s", attempt_timeout="30s", sources=[source, second])
    if lane == "hedged":
        settings["hedge"] = {"after": "20s", "max_share": 1.0}
    return settings


def fixed_answer() -> Any:
    """An in-process upstream (``MockTransport``) answering every request with one chat
    completion: no socket, so the counts repeat to the instruction."""
    from laneway.core.transport import HttpResponse
    from laneway.http.mock import MockTransport

    body = json.dumps(
        {
            "id": "chatcmpl-fixed",
            "object": "chat.completion",
            "created": 1,
            "model": "sim-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Hello there, five words."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18},
        }
    ).encode()
    answer = HttpResponse(200, {"content-type": "application/json"}, body)
    transport = MockTransport(lambda _request: answer)
    transport.requests = NotKept()
    return transport


class NotKept(list[Any]):
    """``MockTransport.requests`` that keeps nothing (a long run would grow it)."""

    def append(self, _item: Any) -> None:
        return None


async def client(base_url: str, lane: str) -> Client:
    from laneway import Laneway
    from laneway.config import LanewayConfig

    if base_url == "mock":
        settings = lane_settings("http://127.0.0.1:9/v1", lane)
        config = LanewayConfig.model_validate({"lanes": {"lane": settings}})
        lw = Laneway.from_settings(config, environ={}, transport=fixed_answer())
    elif lane == "one":
        return await laneway_client(base_url)
    else:
        config = LanewayConfig.model_validate({"lanes": {"lane": lane_settings(base_url, lane)}})
        lw = Laneway.from_settings(config, environ={})

    async def call() -> Any:
        return await lw.chat("lane", MESSAGES)

    return call, lw.aclose


async def main(base_url: str, concurrency: int, calls: int, lane: str) -> None:
    call, close = await client(base_url, lane)
    for _ in range(50):
        await call()
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await close()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    url, conc, count = sys.argv[1:4]
    asyncio.run(main(url, int(conc), int(count), sys.argv[4] if len(sys.argv) > 4 else "one"))
