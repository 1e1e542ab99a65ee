"""What one call has done so far, and what a successful call hands back.

``CallState`` is the call loop's memory of one call (its attempts, the
retries and pushbacks spent, what is in flight); ``CallOutcome`` the answer.
Both are read by the driver (``laneway.engine.call``) and the race of a
hedged attempt (``laneway.engine.race``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.failures import FailureKind
from laneway.core.types import Attempt, Usage
from laneway.core.values import value
from laneway.engine.admission import Admitted, CallSources
from laneway.engine.lane import Source
from laneway.policy.quota import used_tokens

T = TypeVar("T")


@dataclass(slots=True)
class CallState:
    """What one call has done so far; owned by the loop, read by the caller."""

    start: float
    attempts: list[Attempt] = field(default_factory=list)
    sources: CallSources = field(default_factory=CallSources)
    retries_used: int = 0
    class_retries: dict[str, int] = field(default_factory=dict)
    pushbacks_used: int = 0
    failed_at: float | None = None
    last_failure: AttemptFailure | None = None
    in_flight: tuple[str, float] | None = None
    hedge_in_flight: tuple[str, float] | None = None
    waiting: str | None = None
    queue_wait: float = 0.0

    def cut_in_flight(self, now: float) -> None:
        """Record the attempt the deadline cancelled, if one was running."""
        for running in (self.in_flight, self.hedge_in_flight):
            if running is not None:
                name, started = running
                self.attempts.append(
                    Attempt(
                        name, FailureKind.DEADLINE.value, now - started, message="cut at deadline"
                    )
                )
        self.in_flight = self.hedge_in_flight = None


@value
class CallOutcome(Generic[T]):
    """A successful call: the result, the source that gave it, and the history.

    ``queue_wait`` is the time spent waiting for admission (quota, concurrency,
    pushback), not counting backoff sleeps. ``held`` is the successful
    attempt's admission when the caller asked to finish that attempt itself
    (``hold=True``): it is then neither settled nor in ``attempts``.
    """

    result: T
    source: Source
    attempts: tuple[Attempt, ...]
    elapsed: float
    queue_wait: float = 0.0
    held: Admitted | None = None


def skip(state: CallState, source: Source, refusal: Inexpressible) -> None:
    """Leave out a source that cannot carry the request: no retry spent, nothing sent.

    The source is excluded for this call only and its health is untouched
    (admission is released, not settled); the skip is listed in ``attempts``.
    """
    state.sources.excluded.add(source.name)
    state.attempts.append(Attempt(source.name, refusal.label, 0.0, message=refusal.message))


def tokens_used(result: object) -> int | None:
    """The tokens an attempt's result reports (``None``: keep the reservation)."""
    usage = getattr(result, "usage", None)
    return used_tokens(usage) if isinstance(usage, Usage) else None
