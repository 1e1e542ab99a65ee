"""What one call has done so far, and what a successful call hands back.

``CallState`` is the call loop's memory of one call (its attempts, the
retries and pushbacks spent, what is in flight), written by its decision
(``laneway.engine.decision``); ``CallOutcome`` the answer the driver
(``laneway.engine.call``) hands back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from laneway.core.errors import AttemptFailure
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

    def cut_in_flight(self, now: float, start: float | None = None) -> None:
        """Record the attempts the deadline cancelled, if any were running.

        ``start``: the call's start, given when its attempts race (each then
        says when it began, so traces draw the race's attempts overlapping).
        """
        for running in (self.in_flight, self.hedge_in_flight):
            if running is not None:
                name, started = running
                began = None if start is None else started - start
                self.attempts.append(
                    Attempt(
                        name,
                        FailureKind.DEADLINE.value,
                        now - started,
                        message="cut at deadline",
                        began=began,
                    )
                )
        self.in_flight = self.hedge_in_flight = None


@value
class CallOutcome(Generic[T]):
    """A successful call: the result, the source that gave it, and the history.

    ``queue_wait`` is the time spent waiting for admission (quota, concurrency,
    pushback), not counting backoff sleeps. ``held`` is the successful
    attempt's admission when the caller asked to finish that attempt itself
    (``hold=True``): it is then neither settled nor in ``attempts``; ``hedge``
    says that attempt was a hedge that won its race.
    """

    result: T
    source: Source
    attempts: tuple[Attempt, ...]
    elapsed: float
    queue_wait: float = 0.0
    held: Admitted | None = None
    hedge: bool = False


def tokens_used(result: object) -> int | None:
    """The tokens an attempt's result reports (``None``: keep the reservation)."""
    usage = getattr(result, "usage", None)
    return used_tokens(usage) if isinstance(usage, Usage) else None
