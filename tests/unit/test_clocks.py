"""The engine's clocks: virtual sleeps and deadlines cost no real time; the system's are real."""

from __future__ import annotations

import asyncio
import math

import pytest

from laneway.clocks import NothingScheduled, SystemClock, VirtualClock


def test_sleeps_and_deadlines_run_in_virtual_time() -> None:
    clock = VirtualClock(start=0.0)

    async def main() -> list[float]:
        seen = []
        await clock.sleep(5)
        seen.append(clock.now())
        with pytest.raises(TimeoutError):
            async with clock.deadline(8.0):
                await clock.sleep(10)
        seen.append(clock.now())
        return seen

    assert clock.run(main()) == [5.0, 8.0]


def test_a_deadline_scope_ends_at_its_absolute_time_however_late_it_is_entered() -> None:
    clock = VirtualClock(start=0.0)

    async def main() -> float:
        end = clock.now() + 3
        await clock.sleep(1)
        with pytest.raises(TimeoutError):
            async with clock.deadline(end):
                await clock.sleep(60)
        return clock.now()

    assert clock.run(main()) == 3.0


def test_an_infinite_deadline_never_cuts() -> None:
    clock = VirtualClock(start=0.0)

    async def main() -> float:
        async with clock.deadline(math.inf):
            await clock.sleep(86_400)
        return clock.now()

    assert clock.run(main()) == 86_400.0


def test_wall_time_moves_with_virtual_time() -> None:
    clock = VirtualClock(start=0.0, wall_start=1_700_000_000.0)
    clock.run(clock.sleep(2.5))
    assert clock.wall() == 1_700_000_002.5


def test_concurrent_timers_keep_their_order() -> None:
    clock = VirtualClock(start=0.0)

    async def main() -> list[str]:
        order: list[str] = []

        async def after(seconds: float, name: str) -> None:
            await clock.sleep(seconds)
            order.append(f"{name}@{clock.now():g}")

        await asyncio.gather(after(2, "b"), after(1, "a"), after(3, "c"))
        return order

    assert clock.run(main()) == ["a@1", "b@2", "c@3"]


def test_waiting_on_nothing_is_an_error_not_a_hang() -> None:
    async def main() -> None:
        await asyncio.get_running_loop().create_future()

    with pytest.raises(NothingScheduled):
        VirtualClock().run(main())


async def test_the_system_clocks_deadline_cuts_a_sleep_that_would_outlast_it() -> None:
    clock = SystemClock()
    with pytest.raises(TimeoutError):
        async with clock.deadline(clock.now() + 0.01):
            await clock.sleep(60)


async def test_the_system_clocks_past_deadline_cuts_at_once() -> None:
    clock = SystemClock()
    with pytest.raises(TimeoutError):
        async with clock.deadline(clock.now() - 1):
            await clock.sleep(60)
