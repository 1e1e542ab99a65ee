"""Clocks: the only source of time for policies and the engine.

Policies take ``now`` as an argument; the engine reads it from a ``Clock`` so
tests can substitute virtual time.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time in seconds, plus wall time for HTTP dates."""

    def now(self) -> float:
        """Return monotonic seconds."""
        ...

    def wall(self) -> float:
        """Return Unix seconds (only for parsing HTTP-date headers)."""
        ...


class SystemClock:
    """The process clock: ``time.monotonic`` and ``time.time``."""

    def now(self) -> float:
        """Return monotonic seconds."""
        return time.monotonic()

    def wall(self) -> float:
        """Return Unix seconds."""
        return time.time()


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
