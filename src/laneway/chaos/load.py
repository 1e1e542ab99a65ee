"""Offer a scenario's calls on schedule and record how each one ended.

Open loop: calls start on a fixed schedule whatever earlier calls are doing,
as independent users would send them, so a client that slows down meets a
growing queue instead of a politely waiting load generator.

Time comes from the engine's ``Clock`` (the one ``laneway.app`` wired into the
client under test), never from the ``time`` module: the schedule and the
call records then share the engine's timeline, real or virtual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from laneway.chaos.metrics import SeenCall
from laneway.chaos.scenarios import Load
from laneway.core.clock import Clock

Call = Callable[[], Awaitable[str | None]]
"""One call of the client under test: ``None`` on success, else a label for the error."""


async def offer(load: Load, call: Call, offset: float, clock: Clock) -> list[SeenCall]:
    """Make the load's calls; record times on the sim's clock (``clock`` time + ``offset``)."""
    if load.one_at_a_time:
        return await _in_sequence(load, call, offset, clock)
    return await _open_loop(load, call, offset, clock)


async def _timed(call: Call, offset: float, clock: Clock) -> SeenCall:
    start = clock.now()
    error = await call()
    return SeenCall(start + offset, clock.now() + offset, error is None, error)


async def _open_loop(load: Load, call: Call, offset: float, clock: Clock) -> list[SeenCall]:
    began = clock.now()
    tasks = []
    async with asyncio.TaskGroup() as group:
        for index in range(load.offered):
            await clock.sleep(max(began + index / load.per_second - clock.now(), 0.0))
            tasks.append(group.create_task(_timed(call, offset, clock)))
    return [task.result() for task in tasks]


async def _in_sequence(load: Load, call: Call, offset: float, clock: Clock) -> list[SeenCall]:
    records = []
    for index in range(load.calls):
        if index:
            await clock.sleep(load.gap)
        records.append(await _timed(call, offset, clock))
    return records
