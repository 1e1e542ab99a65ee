"""One laneway replica for ``test_replicas``: run calls on a Redis-shared lane, report.

Usage: ``python replica.py REDIS_URL BASE_URL LANE RPM CALLS DEADLINE``. Prints
``ready`` once its lane is open, starts its calls when a line arrives on stdin
(so that both replicas call at once), then prints one JSON line: calls that
succeeded, that hit the deadline, and whether the replica ever fell back to
local state. The test's own process runs the other replica with the same
functions.
"""

from __future__ import annotations

import asyncio
import json
import sys

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import DeadlineExceeded
from laneway.state import FallbackStore

MESSAGES = [{"role": "user", "content": "hello"}]


def replica_config(
    redis_url: str, base_url: str, lane: str, rpm: int, deadline: str
) -> LanewayConfig:
    """One lane of one source with ``rpm``, its state on Redis.

    The source declares a price, so that opening it does not search the price
    catalogue (~0.2 s of CPU a process): what is tested is the quota.
    """
    price = {"input": 1, "output": 1}
    source = {"base_url": base_url, "model": "sim-model", "rpm": rpm, "price": price}
    return LanewayConfig.model_validate(
        {"state": {"url": redis_url}, "lanes": {lane: {"deadline": deadline, "sources": [source]}}}
    )


async def calls_report(lw: Laneway, lane: str, calls: int) -> dict[str, int]:
    """Make ``calls`` calls at once on ``lane``; count how they ended and the state outages."""
    results = await asyncio.gather(
        *(lw.chat(lane, MESSAGES) for _ in range(calls)), return_exceptions=True
    )
    store = lw.engine.loop.admission.store
    assert isinstance(store, FallbackStore)
    return {
        "ok": sum(not isinstance(r, BaseException) for r in results),
        "deadline": sum(isinstance(r, DeadlineExceeded) for r in results),
        "outages": store.outages,
    }


async def main(
    redis_url: str, base_url: str, lane: str, rpm: int, calls: int, deadline: str
) -> None:
    config = replica_config(redis_url, base_url, lane, rpm, deadline)
    async with Laneway.from_settings(config, environ={}) as lw:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        report = await calls_report(lw, lane, calls)
    print(json.dumps(report))


if __name__ == "__main__":
    url, base, lane_name, rpm_text, calls_text, deadline_text = sys.argv[1:]
    asyncio.run(main(url, base, lane_name, int(rpm_text), int(calls_text), deadline_text))
