"""One laneway replica for ``test_replicas``: run calls on a Redis-shared lane, report.

Usage: ``python replica.py REDIS_URL BASE_URL LANE RPM CALLS DEADLINE``. Prints
one JSON line: calls that succeeded, that hit the deadline, and whether the
replica ever fell back to local state.
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


async def main(
    redis_url: str, base_url: str, lane: str, rpm: int, calls: int, deadline: str
) -> None:
    source = {"base_url": base_url, "model": "sim-model", "rpm": rpm}
    config = LanewayConfig.model_validate(
        {"state": {"url": redis_url}, "lanes": {lane: {"deadline": deadline, "sources": [source]}}}
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        results = await asyncio.gather(
            *(lw.chat(lane, MESSAGES) for _ in range(calls)), return_exceptions=True
        )
        store = lw.engine.loop.admission.store
        assert isinstance(store, FallbackStore)
        outages = store.outages
    report = {
        "ok": sum(not isinstance(r, BaseException) for r in results),
        "deadline": sum(isinstance(r, DeadlineExceeded) for r in results),
        "outages": outages,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    url, base, lane_name, rpm_text, calls_text, deadline_text = sys.argv[1:]
    asyncio.run(main(url, base, lane_name, int(rpm_text), int(calls_text), deadline_text))
