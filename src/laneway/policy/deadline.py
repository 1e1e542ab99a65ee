"""Absolute deadlines, anyio-style: a point in monotonic time, never a duration."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Deadline:
    """The monotonic instant by which a call must have ended, and the budget it gave.

    ``budget`` is the call's whole allowance in seconds (the lane's deadline,
    or the caller's when tighter), what errors report as the call's deadline.
    """

    at: float
    budget: float = math.inf

    @classmethod
    def after(cls, now: float, seconds: float | None) -> Deadline:
        """Return the deadline ``seconds`` from ``now`` (never, for ``None``)."""
        if seconds is None:
            return NEVER
        return cls(now + seconds, seconds)

    def remaining(self, now: float) -> float:
        """Seconds left (negative once passed)."""
        return self.at - now

    def expired(self, now: float) -> bool:
        """True once the deadline has passed."""
        return now >= self.at

    def earliest(self, other: Deadline | None) -> Deadline:
        """The tighter of two deadlines (a caller's and a lane's)."""
        if other is None or self.at <= other.at:
            return self
        return other


NEVER = Deadline(math.inf)
"""No deadline: a call's when its caller set none (one shared instance, made once)."""
