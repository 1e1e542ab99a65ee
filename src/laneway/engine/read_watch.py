"""One timer across a relayed segment's reads, not a cancel scope per read.

A relayed stream waits for each network read under its wait limit (the
deadline, ``idle_timeout`` since the last event, the final grace). A cancel
scope per read set a timer and cancelled it every read: on a stream paced by
the model's tokens, one read an event, that was a good part of what a read
cost. ``ReadWatch`` keeps one timer for the segment and moves it only when a
read's limit comes sooner than the timer is set for; when it rings it checks
whether a read is under way and past its limit, and sets itself again for
the limit otherwise. A deadline rings once, an idle limit about once an idle
period, not once a read.

What the scope meant is kept: a read past its limit is cancelled and ends in
``TimeoutError`` (``end`` says so and takes the cancellation back); a
cancellation that is not the watch's (the caller left) goes through.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from laneway.core.clock import Clock, Timer


class ReadWatch:
    """Cuts each read of one segment at the limit it began with (see the module's docstring)."""

    __slots__ = (
        "_cancelling",
        "_clock",
        "_due",
        "_rang",
        "_reader",
        "_set_for",
        "_task",
        "_timer",
    )

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._timer: Timer | None = None
        self._set_for = math.inf
        self._due = math.inf
        self._task: asyncio.Task[Any] | None = None
        """The task reading, while a read is under way."""
        self._reader: asyncio.Task[Any] | None = None
        """The task that reads the segment (a stream is read in one task)."""
        self._rang = False
        self._cancelling = 0

    def begin(self, due: float) -> None:
        """A read starts, to be cut at ``due`` (the clock's time), in the segment's task."""
        task = self._reader
        if task is None:
            task = self._reader = asyncio.current_task()
            assert task is not None, "a read is awaited in a task"
        self._task, self._cancelling, self._due = task, task.cancelling(), due
        if due < self._set_for:
            if self._timer is not None:
                self._timer.cancel()
            self._set(due)

    def end(self) -> bool:
        """The read ended; ``True`` when the watch cut it (its cancellation is taken back)."""
        task, self._task = self._task, None
        if not self._rang or task is None:
            return False
        self._rang = False
        return task.uncancel() <= self._cancelling

    def close(self) -> None:
        """The segment ended: the timer goes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._set_for = None, math.inf

    def _set(self, at: float) -> None:
        self._set_for = at
        self._timer = self._clock.call_at(at, self._ring)

    def _ring(self) -> None:
        self._timer, self._set_for = None, math.inf
        task = self._task
        if task is None:  # between reads: the next read sets it again
            return
        if self._clock.now() < self._due:
            self._set(self._due)
            return
        self._rang = True
        task.cancel()
