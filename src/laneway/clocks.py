"""The clocks the engine waits on: the system's, and a virtual one for tests and replays.

Both wait through asyncio, which ``laneway.core`` may not import, so they live
here, below the engine and beside the other adapters. ``SystemClock`` is
``time.monotonic`` plus the running loop's timers. ``VirtualClock`` is a
``FakeClock`` whose sleeps and deadlines run on ``VirtualTimeLoop``: an event
loop that, instead of blocking in ``select``, moves the clock to the next
timer. Code that awaits only timers (the call loop against an in-process
upstream) runs there exactly as in real time, deterministically, in
microseconds. Real sockets do not belong on it: there is nothing to wait for
in virtual time, so a socket that is not ready at once would read as silence.
"""

from __future__ import annotations

import asyncio
import math
import selectors
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from laneway.core.clock import FakeClock

T = TypeVar("T")


def _scope_at(clock_now: float, at: float) -> CancelScope:
    """A deadline scope for ``at`` on a clock that reads ``clock_now`` at this moment.

    The loop's own time may run on another origin (uvloop's is libuv's cached
    millisecond clock), so the deadline crosses over as time left, not as a
    reading.
    """
    if math.isinf(at):
        return CancelScope(None)
    return CancelScope(asyncio.get_running_loop().time() + (at - clock_now))


class CancelScope:
    """``asyncio.timeout_at``'s scope in fewer steps: its body is cancelled at loop time ``when``.

    Every engine call opens one or two (its deadline, an attempt's timeout), and
    ``asyncio.Timeout``'s state machine and rescheduling were a measurable part of a
    call. This keeps what the scope means: one timer; at expiry the task is
    cancelled; on the way out the cancellation is taken back (``uncancel``) and
    turned into ``TimeoutError`` only when no other cancellation is pending and
    the body ended cancelled, as ``asyncio.Timeout`` does. ``None``: never.
    """

    __slots__ = ("_cancelling", "_expired", "_handle", "_task", "_when")

    def __init__(self, when: float | None) -> None:
        self._when = when
        self._expired = False
        self._handle: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> CancelScope:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline scope is entered inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        if self._when is not None:
            self._handle = asyncio.get_running_loop().call_at(self._when, self._expire)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        handle = self._handle
        if handle is not None:
            handle.cancel()
            self._handle = None
        if (
            self._expired
            and self._task.uncancel() <= self._cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc

    def _expire(self) -> None:
        self._handle = None
        self._expired = True
        self._task.cancel()


def _timer_at(clock_now: float, at: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
    """``loop.call_at`` for ``at`` on a clock that reads ``clock_now`` at this moment (the
    loop's time may run on another origin, so ``at`` crosses over as time left)."""
    return asyncio.get_running_loop().call_later(at - clock_now, callback)


class SystemClock:
    """The process clock: ``time.monotonic``, ``time.time`` and the running loop's timers.

    ``now`` and ``wall`` are the ``time`` functions themselves, not methods
    that call them: a call reads the clock about fifteen times, and a Python
    frame per reading was a measurable part of the engine's overhead.
    """

    now = staticmethod(time.monotonic)
    """Return monotonic seconds."""
    wall = staticmethod(time.time)
    """Return Unix seconds."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on the running loop."""
        await asyncio.sleep(seconds)

    def call_at(self, at: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        """Call ``callback`` at monotonic ``at`` from the running loop."""
        return _timer_at(time.monotonic(), at, callback)

    def deadline(self, at: float) -> CancelScope:
        """Cancel the body at monotonic ``at`` (``inf``: never), raising ``TimeoutError``."""
        return _scope_at(self.now(), at)


class NothingScheduled(RuntimeError):
    """The virtual loop would wait forever: no timer is set and nothing is ready."""


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


class VirtualClock(FakeClock):
    """Virtual time that waits: ``sleep`` and ``deadline`` cost no real time under ``run``.

    Its waits are the running loop's timers, so they are virtual only on the
    ``VirtualTimeLoop`` that ``run`` makes for this clock.
    """

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of virtual time."""
        await asyncio.sleep(seconds)

    def deadline(self, at: float) -> CancelScope:
        """Cancel the body at virtual ``at`` (``inf``: never), raising ``TimeoutError``."""
        return _scope_at(self.now(), at)

    def call_at(self, at: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        """Call ``callback`` at virtual ``at`` from the running loop."""
        return _timer_at(self.now(), at, callback)

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """Run ``main`` to completion on a ``VirtualTimeLoop`` over this clock."""
        with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(self)) as runner:
            return runner.run(main)
