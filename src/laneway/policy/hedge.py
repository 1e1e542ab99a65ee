"""Hedged requests: when a second attempt starts, and whether the lane may afford it.

A hedge is a second attempt on another source, started while the first is
still without an answer ``after`` its start; the first whole answer wins and
the other attempt is cancelled. Three pure pieces decide it:

- ``HedgeLimits.delay``: how long the first attempt runs alone. A fixed
  ``after``, or the lane's live percentile (``p95``, ``p99``) of the time its
  attempts took to answer (a stream's first byte, a whole answer otherwise),
  over the last ``WINDOW`` successes, plus ``MARGIN``. With fewer than ``MIN_SAMPLES`` the
  delay is the cap; a percentile is clamped to ``[FLOOR, cap]``, where the
  cap is half the attempt timeout: a hedge that starts later has little of
  the attempt's time left to win in.
- ``HedgeBudget``: a token bucket over a sliding minute. Each call of the
  lane adds ``max_share`` of a token, each hedge takes one, and the bucket
  holds one token more than the minute's calls earned, so a quiet lane may
  hedge its first slow call while an outage or a slow provider cannot lift
  the lane's upstream requests by more than ``max_share`` (plus one a minute).
- ``step``: the race's next action, given when the first attempt started and
  whether a hedge runs: ``Wait`` for the hedge's time, ``Hedge`` now, or
  ``HoldOn`` (let the attempts run out; nothing more to start).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

WINDOW = 200
"""Successful attempts a lane keeps for a percentile ``after``."""
MIN_SAMPLES = 20
"""Successes needed before a percentile ``after`` is trusted; the cap applies until then."""
FLOOR = 0.05
"""The shortest percentile ``after`` (50 ms): below it a hedge races the network, not a tail."""
CAP_SHARE = 0.5
"""A percentile ``after`` is at most this share of the attempt timeout."""
MARGIN = 1.1
"""A percentile ``after`` is 10% past the percentile: an answer that comes at the usual time
(a lane whose p95 is its typical latency) is not raced by a hedge started at that very moment."""
MINUTE = 60.0
PERCENTILES = MappingProxyType({"p95": 0.95, "p99": 0.99})


@dataclass(frozen=True, slots=True)
class HedgeLimits:
    """A lane's hedge: a fixed ``after`` in seconds, or a ``percentile`` (0.95, 0.99)."""

    after: float | None
    percentile: float | None
    max_share: float
    attempt_timeout: float

    def __post_init__(self) -> None:
        if (self.after is None) == (self.percentile is None):
            raise ValueError("a hedge has a fixed after or a percentile, not both")
        if self.after is not None and not 0 < self.after <= self.attempt_timeout:
            raise ValueError("hedge after must be positive and within the attempt timeout")
        if not 0.0 <= self.max_share <= 1.0:
            raise ValueError("hedge max_share must be between 0 and 1")

    @property
    def cap(self) -> float:
        """The longest a first attempt runs alone: a fixed ``after``, else the percentile's cap."""
        if self.after is not None:
            return self.after
        return max(self.attempt_timeout * CAP_SHARE, FLOOR)

    def delay(self, answered: Sequence[float]) -> float:
        """Seconds the first attempt runs alone, given the lane's recent answer times."""
        if self.after is not None:
            return self.after
        if len(answered) < MIN_SAMPLES:
            return self.cap
        assert self.percentile is not None
        ranked = sorted(answered)
        rank = min(len(ranked) - 1, math.ceil(self.percentile * len(ranked)) - 1)
        return min(max(ranked[rank] * MARGIN, FLOOR), self.cap)

    def describe(self) -> str:
        """``after 800ms`` or ``after p95 (50ms-5s, 20 samples)``, and the share."""
        share = f"max_share {self.max_share:g}"
        if self.after is not None:
            return f"after {_seconds(self.after)}, {share}"
        name = next(k for k, v in PERCENTILES.items() if v == self.percentile)
        bounds = f"{_seconds(FLOOR)}-{_seconds(self.cap)}, {MIN_SAMPLES} samples"
        return f"after {name} ({bounds}), {share}"


def _seconds(value: float) -> str:
    return f"{value * 1000:g}ms" if value < 1 else f"{value:g}s"


@dataclass(slots=True)
class HedgeBudget:
    """The lane's hedges and calls of the last minute; ``take`` spends a hedge if one is left."""

    max_share: float
    calls: deque[float] = field(default_factory=deque)
    hedges: deque[float] = field(default_factory=deque)
    called: Callable[[float], None] = field(init=False, repr=False, compare=False)
    """Count one call of the lane at ``now`` (each earns ``max_share`` of a hedge): the
    ``calls`` deque's own ``append``, so counting a call runs no Python frame (every call of
    a hedged lane counts, and a hedge that never fires must cost next to nothing)."""

    def __post_init__(self) -> None:
        self.called = self.calls.append

    def take(self, now: float) -> bool:
        """Spend one hedge when the minute's calls leave one; ``False``: no hedge."""
        since = now - MINUTE
        for times in (self.calls, self.hedges):
            while times and times[0] <= since:
                times.popleft()
        if self.max_share <= 0 or len(self.hedges) > self.max_share * len(self.calls):
            return False
        self.hedges.append(now)
        return True

    def refund(self) -> None:
        """Give back the hedge just taken: it was not admitted, so not sent."""
        if self.hedges:
            self.hedges.pop()


@dataclass(slots=True)
class AnswerTimes:
    """The lane's last ``WINDOW`` answer times (first byte, or whole answer), for ``delay``."""

    times: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))

    def add(self, seconds: float) -> None:
        """Keep one successful attempt's time to answer."""
        self.times.append(seconds)


@dataclass(frozen=True, slots=True)
class Hedge:
    """Start the hedge now, on another source."""


@dataclass(frozen=True, slots=True)
class HoldOn:
    """Start nothing more: wait for the attempts in flight."""


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """Wait for the attempts in flight until ``at`` (this clock's time), then decide again."""

    at: float


HEDGE = Hedge()
HOLD_ON = HoldOn()
Step = Hedge | HoldOn | WaitUntil


def step(started: float, delay: float, now: float, *, hedged: bool, hedgeable: bool) -> Step:
    """The race's next action: the first attempt began at ``started`` and runs ``delay`` alone.

    ``hedged``: a hedge was started or refused already; ``hedgeable``: the
    call may start one at all (another source exists, the attempt's time left
    is longer than the delay).
    """
    if hedged or not hedgeable:
        return HOLD_ON
    due = started + delay
    if now < due:
        return WaitUntil(due)
    return HEDGE
