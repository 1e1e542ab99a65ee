"""Clocks: the only source of time for policies and the engine.

Policies take ``now`` as an argument. Stores and caches read a ``TimeSource``.
The engine waits and bounds its waits only through a ``Clock``, so a test can
run it in virtual time (``laneway.clocks.VirtualClock``). The implementations
that wait need an event loop, which core does not import: they live in
``laneway.clocks``. ``FakeClock`` is the time source pure policy tests move by
hand.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol


class TimeSource(Protocol):
    """Monotonic time in seconds, plus wall time for HTTP dates: time read, never waited on."""

    def now(self) -> float:
        """Return monotonic seconds."""
        ...

    def wall(self) -> float:
        """Return Unix seconds (only for parsing HTTP-date headers and records)."""
        ...


class Clock(TimeSource, Protocol):
    """A time source that can also wait, and cut a wait short at a deadline of its own time."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...

    def deadline(self, at: float) -> AbstractAsyncContextManager[object]:
        """A scope whose body is cancelled at ``at`` (this clock's ``now``), then ``TimeoutError``.

        ``at`` is absolute, so nested scopes and retries share one end; ``inf``
        means no deadline. Like ``asyncio.timeout_at``, the cancellation is
        turned into ``TimeoutError`` only at the scope that set it.
        """
        ...

    def call_at(self, at: float, callback: Callable[[], object]) -> Timer:
        """Call ``callback`` at ``at`` (this clock's ``now``) from the running loop, unless
        the returned timer is cancelled first: what starts a hedge beside an attempt in flight."""
        ...


class Timer(Protocol):
    """A callback set for later (``Clock.call_at``)."""

    def cancel(self) -> None:
        """Do not call it (nothing, once it was called)."""
        ...


class FakeClock:
    """Virtual time for policy tests: moves only when told to."""

    def __init__(self, start: float = 1000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall_start - start

    def now(self) -> float:
        """Return virtual monotonic seconds."""
        return self._now

    def wall(self) -> float:
        """Return virtual Unix seconds, advancing with ``now``."""
        return self._now + self._wall_offset

    def advance(self, seconds: float) -> None:
        """Move virtual time forward."""
        self._now += seconds
