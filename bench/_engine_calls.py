"""A fixed number of ``lw.chat()`` calls, for instruction counts (``engine_instructions.sh``).

    python bench/_engine_calls.py BASE_URL CONCURRENCY CALLS [LANE]

LANE is ``one`` (the default: ``_engine_load.laneway_client``, the engine
overhead benchmark's one-source lane), ``two`` (that lane with two sources,
both on the same upstream, and a 30 s attempt timeout) or ``hedged`` (``two``
with ``hedge: {after: 20s, max_share: 1.0}``, a hedge that never fires: the
upstream answers in microseconds). ``hedged`` minus ``two`` is what an unused
hedge costs a call. The client runs from whatever ``laneway`` is on
``PYTHONPATH``, so two trees are measured by the same driver. 50 warm-up calls
come first. Run under ``valgrind --tool=callgrind`` twice with different
``CALLS``: the difference of the totals over the difference of the calls is
the instructions of one call, start-up and warm-up cancelled out. Instruction
counts repeat on a busy machine, where wall-clock figures do not.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from _engine_load import MESSAGES, laneway_client

Client = tuple[Callable[[], Awaitable[Any]], Callable[[], Awaitable[None]]]


async def two_source_client(base_url: str, *, hedged: bool) -> Client:
    from laneway import Laneway
    from laneway.config import LanewayConfig

    source = {"base_url": base_url, "model": "sim-model"}
    lane: dict[str, Any] = {
        "deadline": "60s",
        "attempt_timeout": "30s",
        "retries": 2,
        "retry_on": [503, "timeout"],
        "sources": [{**source, "name": "first"}, {**source, "name": "second", "priority": 1}],
    }
    if hedged:
        lane["hedge"] = {"after": "20s", "max_share": 1.0}
    lw = Laneway.from_settings(LanewayConfig.model_validate({"lanes": {"lane": lane}}), environ={})

    async def call() -> Any:
        return await lw.chat("lane", MESSAGES)

    return call, lw.aclose


async def client(base_url: str, lane: str) -> Client:
    if lane == "one":
        return await laneway_client(base_url)
    if lane in ("two", "hedged"):
        return await two_source_client(base_url, hedged=lane == "hedged")
    raise SystemExit(f"unknown lane {lane!r}: one, two or hedged")


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
