"""Offer a scenario's calls on schedule and record how each one ended.

Open loop: calls start on a fixed schedule whatever earlier calls are doing,
as independent users would send them, so a client that slows down meets a
growing queue instead of a politely waiting load generator.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from laneway.chaos.metrics import SeenCall
from laneway.chaos.scenarios import Load

Call = Callable[[], Awaitable[str | None]]
"""One call of the client under test: ``None`` on success, else a label for the error."""


async def offer(load: Load, call: Call, offset: float) -> list[SeenCall]:
    """Make the load's calls; record times on the sim's clock (local time + ``offset``)."""
    if load.one_at_a_time:
        return await _in_sequence(load, call, offset)
    return await _open_loop(load, call, offset)


async def _timed(call: Call, offset: float) -> SeenCall:
    start = time.monotonic()
    error = await call()
    return SeenCall(start + offset, time.monotonic() + offset, error is None, error)


async def _open_loop(load: Load, call: Call, offset: float) -> list[SeenCall]:
    began = time.monotonic()
    tasks = []
    async with asyncio.TaskGroup() as group:
        for index in range(load.offered):
            await asyncio.sleep(max(began + index / load.per_second - time.monotonic(), 0.0))
            tasks.append(group.create_task(_timed(call, offset)))
    return [task.result() for task in tasks]


async def _in_sequence(load: Load, call: Call, offset: float) -> list[SeenCall]:
    records = []
    for index in range(load.calls):
        if index:
            await asyncio.sleep(load.gap)
        records.append(await _timed(call, offset))
    return records
