"""What to do after a failed attempt: retry, honour a pushback, or give up.

``RetryPolicy.decide`` is the whole retry semantics of a lane, as a pure
function: the engine performs what it returns (tenacity's ``iter()`` shape).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from laneway.core.errors import AttemptFailure
from laneway.core.units import format_duration
from laneway.policy.backoff import Backoff

PUSHBACK_STATUSES = frozenset({429, 503})
REJECTION_KINDS = frozenset({"rejected", "context_length"})


@dataclass(frozen=True, slots=True)
class Retry:
    """Sleep ``delay`` seconds, then make another attempt (spends a retry)."""

    delay: float


@dataclass(frozen=True, slots=True)
class Pushback:
    """Wait what the upstream asked, then try again without spending a retry."""

    wait: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Stop: ``reason`` says why; ``pushback`` marks a refused Retry-After."""

    reason: str
    pushback: bool = False


Decision = Retry | Pushback | GiveUp


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """A lane's retry rules. ``retries`` counts extra attempts after the first."""

    retries: int = 0
    retry_on: frozenset[str] = field(default_factory=frozenset)
    backoff: Backoff = field(default_factory=Backoff)
    min_attempt: float = 0.25
    max_pushback_wait: float = 30.0
    max_pushbacks: int = 2

    def decide(
        self,
        failure: AttemptFailure,
        *,
        retries_used: int,
        pushbacks_used: int,
        remaining: float,
        rng: random.Random,
    ) -> Decision:
        """Decide after ``failure`` with ``remaining`` seconds before the deadline."""
        if failure.kind in REJECTION_KINDS:
            return GiveUp(f"the upstream rejected the request ({failure.label})")
        wait = self._pushback_wait(failure)
        if wait is not None:
            refusal = self._refuse_pushback(wait, remaining)
            if refusal is not None:
                return refusal
            if pushbacks_used < self.max_pushbacks:
                return Pushback(wait)
        return self._retry(failure, retries_used, remaining, rng, floor=wait or 0.0)

    def _pushback_wait(self, failure: AttemptFailure) -> float | None:
        if failure.retry_after is None or failure.status not in PUSHBACK_STATUSES:
            return None
        return failure.retry_after

    def _refuse_pushback(self, wait: float, remaining: float) -> GiveUp | None:
        if wait > self.max_pushback_wait:
            return GiveUp(
                f"upstream asked to wait {format_duration(wait)}, over max_pushback_wait "
                f"{format_duration(self.max_pushback_wait)}",
                pushback=True,
            )
        if wait + self.min_attempt > remaining:
            return GiveUp(
                f"upstream asked to wait {format_duration(wait)}, but only "
                f"{format_duration(max(remaining, 0.0))} is left before the deadline",
                pushback=True,
            )
        return None

    def _retry(
        self,
        failure: AttemptFailure,
        retries_used: int,
        remaining: float,
        rng: random.Random,
        floor: float,
    ) -> Decision:
        if failure.label not in self.retry_on:
            return GiveUp(f"{failure.label} is not in retry_on")
        if retries_used >= self.retries:
            return GiveUp(f"all {self.retries} retries spent")
        delay = max(self.backoff.delay(retries_used + 1, rng), floor)
        if delay + self.min_attempt > remaining:
            return GiveUp("no time left for another attempt before the deadline")
        return Retry(delay)

    def worst_case(self, attempt_timeout: float, deadline: float) -> float:
        """The longest wall time the schedule can take, capped by the deadline.

        Pushback waits are not counted: they are bounded by the deadline alone.
        """
        total = attempt_timeout * (self.retries + 1)
        total += sum(self.backoff.ceiling(n) for n in range(1, self.retries + 1))
        return min(total, deadline)
