"""The virtual-time loop: timers fire in order, in no real time, and a hang is an error."""

from __future__ import annotations

import asyncio
import time

import pytest

from laneway.core.clock import FakeClock
from laneway.sizing.virtual import NothingScheduled, run_virtual


def test_sleeps_and_timeouts_run_in_virtual_time() -> None:
    clock = FakeClock(start=0.0)

    async def main() -> list[float]:
        seen = []
        await asyncio.sleep(5)
        seen.append(clock.now())
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(3):
                await asyncio.sleep(10)
        seen.append(clock.now())
        return seen

    began = time.perf_counter()
    assert run_virtual(main(), clock) == [5.0, 8.0]
    assert time.perf_counter() - began < 5


def test_concurrent_timers_keep_their_order() -> None:
    clock = FakeClock(start=0.0)

    async def main() -> list[str]:
        order: list[str] = []

        async def after(seconds: float, name: str) -> None:
            await asyncio.sleep(seconds)
            order.append(f"{name}@{clock.now():g}")

        await asyncio.gather(after(2, "b"), after(1, "a"), after(3, "c"))
        return order

    assert run_virtual(main(), clock) == ["a@1", "b@2", "c@3"]


def test_waiting_on_nothing_is_an_error_not_a_hang() -> None:
    async def main() -> None:
        await asyncio.get_running_loop().create_future()

    with pytest.raises(NothingScheduled):
        run_virtual(main(), FakeClock())
