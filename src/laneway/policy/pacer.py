"""AIMD concurrency per source: how many attempts may be in flight at once.

The limit grows by ``1/limit`` per success while the limit is actually in use
(so by one per limit's worth of successes, as TCP does), and is cut by
``cut_factor`` on a 429 or a timeout. Only attempts that started after the
last cut can cut again: a burst of 429s from one overloaded moment is one
signal, not ten, and must not collapse the limit to its floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from laneway.policy.outcome import Verdict
from laneway.policy.waits import ADMIT, UNTIL_RELEASE, Admit, Wait

CONCURRENCY_FULL = "concurrency"


@dataclass(frozen=True, slots=True)
class PacerLimits:
    """The range the limit moves in, where it starts, and how hard it is cut."""

    min: int = 1
    max: int = 64
    initial: int | None = None
    cut_factor: float = 0.5

    def __post_init__(self) -> None:
        start = self.max if self.initial is None else self.initial
        if not 1 <= self.min <= start <= self.max:
            raise ValueError("concurrency needs 1 <= min <= initial <= max")
        if not 0.0 < self.cut_factor < 1.0:
            raise ValueError("concurrency cut_factor must be between 0 and 1")

    @property
    def start(self) -> int:
        """The limit before any outcome is known."""
        return self.max if self.initial is None else self.initial


@dataclass(slots=True)
class Pacer:
    """One source's limit and the attempts it has in flight (local to a process)."""

    limits: PacerLimits
    limit: float = field(init=False)
    in_flight: int = 0
    last_cut: float = -math.inf

    def __post_init__(self) -> None:
        self.limit = float(self.limits.start)

    @property
    def slots(self) -> int:
        """Whole attempts the limit allows at once."""
        return math.floor(self.limit)

    def gate(self) -> Admit | Wait:
        """Admit when a slot is free, else wait for one to be released."""
        if self.in_flight < self.slots:
            return ADMIT
        return Wait(UNTIL_RELEASE, CONCURRENCY_FULL)

    def take(self) -> None:
        """Occupy a slot (after ``gate`` admitted)."""
        self.in_flight += 1

    def give_back(self) -> None:
        """Free a slot whose attempt never ran or was cancelled: no signal either way."""
        self.in_flight = max(self.in_flight - 1, 0)

    def leave(self, verdict: Verdict, started: float, now: float) -> None:
        """Free a slot and adapt the limit to the attempt's outcome."""
        in_use = self.in_flight >= self.slots
        self.give_back()
        if verdict.overloads and started >= self.last_cut:
            self.limit = max(float(self.limits.min), self.limit * self.limits.cut_factor)
            self.last_cut = now
        elif verdict is Verdict.OK and in_use:
            self.limit = min(float(self.limits.max), self.limit + 1.0 / self.limit)
