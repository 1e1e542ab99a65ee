"""Backoff between retries, per lane: constant or exponential, with jitter."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Jitter = Literal["none", "full", "equal"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """The sleep before retry ``n`` (1-based) is ``base`` or ``base * 2**(n-1)``.

    It is capped at ``cap`` and then jittered: ``full`` draws from [0, d],
    ``equal`` from [d/2, d]. The engine further cuts each sleep to the time left.
    """

    kind: Literal["constant", "exponential"] = "constant"
    base: float = 1.0
    cap: float = 8.0
    jitter: Jitter = "none"

    def ceiling(self, retry: int) -> float:
        """The largest sleep before retry ``retry`` (no jitter applied)."""
        if self.kind == "constant":
            return min(self.base, self.cap)
        return min(self.base * 2.0 ** (retry - 1), self.cap)

    def floor(self, retry: int) -> float:
        """The smallest sleep before retry ``retry`` its jitter can draw."""
        top = self.ceiling(retry)
        if self.jitter == "full":
            return 0.0
        if self.jitter == "equal":
            return top / 2.0
        return top

    def delay(self, retry: int, rng: random.Random) -> float:
        """The sleep before retry ``retry``, jitter drawn from ``rng``."""
        top = self.ceiling(retry)
        if self.jitter == "full":
            return rng.uniform(0.0, top)
        if self.jitter == "equal":
            return top / 2.0 + rng.uniform(0.0, top / 2.0)
        return top
