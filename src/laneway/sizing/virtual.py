"""An event loop whose clock is a ``FakeClock``: sleeps and timeouts cost no real time.

The loop never waits in ``select``: when nothing is ready it moves the clock
to the next timer and runs it. Code that awaits only timers (the call loop
with a scripted attempt function) therefore runs exactly as it would in real
time, deterministically, in microseconds. Real I/O does not belong on it:
there is nothing to wait for in virtual time.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

from laneway.core.clock import FakeClock

T = TypeVar("T")


class NothingScheduled(RuntimeError):
    """The loop would wait forever: no timer is set and nothing is ready."""


class _TimeTravellingSelector(selectors.SelectSelector):
    """Polls without blocking; where ``select`` would block, advances the clock instead."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            raise NothingScheduled("virtual time: nothing is scheduled, the loop would hang")
        self._clock.advance(timeout)
        return events


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop on ``clock``'s virtual time."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(_TimeTravellingSelector(clock))
        self.clock = clock

    def time(self) -> float:
        """The clock's virtual now (what timers and ``asyncio.timeout`` read)."""
        return self.clock.now()


def run_virtual(main: Coroutine[Any, Any, T], clock: FakeClock) -> T:
    """Run ``main`` to completion on a ``VirtualTimeLoop`` over ``clock``."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(clock)) as runner:
        return runner.run(main)
