"""What to do after a failed attempt: retry, honour a pushback, or give up.

``RetryPolicy.decide`` is the whole retry semantics of a lane, as a pure
function: the engine performs what it returns (tenacity's ``iter()`` shape).

Trying again is a new upstream request, so it is only ever what the lane
declared: a retry (``retries``, for what ``retry_on`` lists, each class within
its own count) or a pushback (``max_pushbacks``, off by default). A decision to
try again says how long the call must wait before going back to the source
that failed (``delay``: the backoff, and never less than the source's
Retry-After); which source the next attempt goes to is selection's business.
``if_alone`` is set when the failed source cannot be tried again in this call
(its Retry-After is over ``max_pushback_wait`` or past the deadline, or the
backoff leaves no time): the call moves to another source, or ends with that
verdict when there is none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from laneway.core.errors import AttemptFailure
from laneway.core.failures import PUSHBACK_STATUSES, REJECTIONS, STATUS_LABELLED
from laneway.core.units import format_duration
from laneway.policy.backoff import Backoff


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Stop: ``reason`` says why; ``pushback`` marks a refused Retry-After of ``ready_in`` s."""

    reason: str
    pushback: bool = False
    ready_in: float | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """Try again, spending a retry; go back to the failed source only after ``delay``."""

    delay: float
    if_alone: GiveUp | None = None


@dataclass(frozen=True, slots=True)
class Pushback:
    """Try again without spending a retry; go back to the source only after ``delay``."""

    delay: float
    if_alone: GiveUp | None = None


@dataclass(frozen=True, slots=True)
class Move:
    """Try another source at once, spending nothing: this one cannot serve the request.

    After ``context_length_exceeded``, to a source with a larger declared
    ``context_window`` (never the same request to the same source).
    """

    delay: float = 0.0
    if_alone: GiveUp | None = None


Decision = Retry | Pushback | Move | GiveUp
"""What the call does after a failure (``Move`` is the engine's, after a context-length refusal)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """A lane's retry rules. ``retries`` counts extra attempts after the first.

    ``retry_on`` maps each retried class (a status code or ``timeout``,
    ``connect``, ``empty``, ``cut``) to how many retries it may spend;
    ``retries`` bounds them all. ``per_class`` says the lane gave the counts
    (``retry_on: {503: 2, timeout: 1}``) rather than a list.
    """

    retries: int = 0
    retry_on: Mapping[str, int] = field(default_factory=dict)
    backoff: Backoff = field(default_factory=Backoff)
    min_attempt: float = 0.25
    max_pushback_wait: float = 30.0
    max_pushbacks: int = 0
    per_class: bool = False

    def decide(
        self,
        failure: AttemptFailure,
        *,
        retries_used: int,
        class_used: int,
        pushbacks_used: int,
        remaining: float,
        rng: random.Random,
    ) -> Retry | Pushback | GiveUp:
        """Decide after ``failure`` with ``remaining`` seconds before the deadline.

        ``class_used`` counts the retries already spent on ``failure.label``.
        """
        if failure.kind in REJECTIONS:
            return GiveUp(f"the upstream rejected the request ({failure.label})")
        ready_in = failure.retry_after
        if self._pushback_applies(failure, pushbacks_used):
            delay = ready_in or 0.0
            if_alone = self._if_alone(delay, ready_in, remaining)
            if if_alone is not None and remaining < self.min_attempt:
                return if_alone
            return Pushback(delay, if_alone)
        if not failure.kind.retry_class and failure.kind not in STATUS_LABELLED:
            return GiveUp(f"{failure.label} is never retried: the same request would fail alike")
        refusal = self._retry_refusal(failure.label, retries_used, class_used)
        if refusal is not None:
            return GiveUp(refusal)
        delay = max(self.backoff.delay(retries_used + 1, rng), ready_in or 0.0)
        if_alone = self._if_alone(delay, ready_in, remaining)
        if if_alone is not None and remaining < self.min_attempt:
            return if_alone
        return Retry(delay, if_alone)

    def retries_allowed(self, label: str) -> int:
        """How many retries a failure of class ``label`` may spend in one call."""
        return min(self.retries, self.retry_on.get(label, 0))

    def most_requests(self, *, context_moves: int = 0) -> int:
        """The most upstream requests one run of the call loop can make.

        The first attempt, every retry (no more than the classes' counts add
        up to), every pushback, and every move to a larger ``context_window``.
        """
        return 1 + self.most_retries() + self.max_pushbacks + context_moves

    def worst_case(self, attempt_timeout: float, deadline: float) -> float:
        """The longest wall time the schedule can take, capped by the deadline.

        Each wait is the backoff, or a Retry-After up to ``max_pushback_wait``
        when that is longer.
        """
        ceilings = [self.backoff.ceiling(n) for n in range(1, self.most_retries() + 1)]
        waits = [max(c, self.max_pushback_wait) for c in ceilings]
        waits += [self.max_pushback_wait] * self.max_pushbacks
        total = attempt_timeout * (1 + len(waits)) + sum(waits)
        return min(total, deadline)

    def most_retries(self) -> int:
        """The most retries one call can spend: ``retries``, or what the counts add up to."""
        return min(self.retries, sum(self.retry_on.values()))

    def _pushback_applies(self, failure: AttemptFailure, pushbacks_used: int) -> bool:
        return (
            failure.retry_after is not None
            and failure.status in PUSHBACK_STATUSES
            and pushbacks_used < self.max_pushbacks
        )

    def _retry_refusal(self, label: str, retries_used: int, class_used: int) -> str | None:
        if label not in self.retry_on:
            return f"{label} is not in retry_on"
        if retries_used >= self.retries:
            return f"all {self.retries} retries spent"
        allowed = self.retry_on[label]
        if class_used >= allowed:
            noun = "retry" if allowed == 1 else "retries"
            return f"retry_on gives {label} {allowed} {noun}, spent"
        return None

    def _if_alone(self, delay: float, ready_in: float | None, remaining: float) -> GiveUp | None:
        """Why the failed source cannot be tried again in this call, if it cannot."""
        if ready_in is not None and ready_in > self.max_pushback_wait:
            return GiveUp(
                f"over max_pushback_wait {format_duration(self.max_pushback_wait)}",
                pushback=True,
                ready_in=ready_in,
            )
        if ready_in is not None and ready_in + self.min_attempt > remaining:
            left = format_duration(max(remaining, 0.0))
            return GiveUp(
                f"only {left} is left before the deadline", pushback=True, ready_in=ready_in
            )
        if delay + self.min_attempt > remaining:
            return GiveUp("no time left for another attempt before the deadline")
        return None
