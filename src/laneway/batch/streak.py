"""When a job stops: a run of calls that failed alike in a way retrying cannot fix.

A lane's retries, breakers and pacing are made for failures that pass
(timeouts, 5xx, 429). Some failures do not pass: a source that answers
vectors of another length than the lane pins, a revoked key (401), a model
the upstream does not know (404), a parameter it refuses (400). Those are
neutral to a source's health (the source is up; the request is wrong), so
no breaker opens, and every call of the job meets the same failure: the whole
corpus is sent and billed for nothing. A structured answer still invalid
after every re-ask is alike: its repair is spent, and calls in a row failing
so point at the schema or the prompt. ``Streak`` watches the calls as they
end and says when ``limit`` calls in a row, with no success between them,
failed with the same such failure; the job then stops sending.

The calls that failed so are held back from the checkpoint (they failed
because of the job, not because of their items), so a rerun after the fix
sends them again along with everything not yet sent, and nothing that was
answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from laneway.batch.results import ItemError, ItemResult
from laneway.core.errors import BatchStopped
from laneway.core.failures import REJECTION_STATUSES, FailureKind

STOP_AFTER = 5
"""Default: calls in a row failing alike (and unfixable by a retry) that stop a job."""

UNFIXABLE_OUTCOMES = frozenset(
    {FailureKind.DIMENSION, FailureKind.MALFORMED, FailureKind.TOO_LARGE, FailureKind.UNSUPPORTED}
)
"""Attempt outcomes the same request meets again (rejections are named by their status)."""

JOB_CODES = frozenset({"vector_invalid", "request_invalid"})
"""Item errors found by the job itself (verification, a refused request), no attempt made."""

SPENT_CODES = frozenset({"result_invalid"})
"""Item errors reported after their own repair was spent (every re-ask made)."""

ADVICE = {
    "dimension": "",
    "malformed": "the answers cannot be read: check that base_url is the API the provider names",
    "too_large": "the answers are over max_response_bytes: raise it, or lower max_batch_items",
    "unsupported": "the source's wire format cannot carry these requests: check the job's --param",
    "result_invalid": (
        "no answer matched the schema after every re-ask: check the schema against the prompt "
        "(the message says what was wrong), or give more --reasks"
    ),
    "vector_invalid": "every vector fails verification: check the source's model and dimensions",
    "request_invalid": "every request is refused before it is sent: check the job's --param",
    "context_length_exceeded": (
        "the items are over the source's context window: give the lane a source with a larger one"
    ),
    "400": "the upstream refuses the request itself: its message says which field",
    "401": "the upstream refuses laneway's credentials: check the source's api_key",
    "403": "the upstream refuses laneway's credentials: check the source's api_key",
    "404": "the upstream does not know the model or the path: check model and base_url",
    "413": "the requests are too large for the upstream: lower max_batch_items",
    "422": "the upstream refuses the request itself: its message says which field",
}
"""What to do, per failure, where the failure's own message does not say it."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One call's failure as a streak compares it: the same key means the same failure."""

    key: str
    error: ItemError


def unfixable(results: Sequence[ItemResult]) -> Failure | None:
    """The failure of a call all of whose items failed alike, when a retry cannot fix it."""
    errors = [r.error for r in results]
    if not errors or any(e is None for e in errors):
        return None
    keys = {_key(e) for e in errors if e is not None}
    first = errors[0]
    if len(keys) != 1 or first is None:
        return None
    (key,) = keys
    return None if key is None else Failure(key, first)


def _key(error: ItemError) -> str | None:
    """``code/outcome`` of an error a retry cannot fix; ``None`` for any other."""
    if error.code in SPENT_CODES:
        return error.code
    if not error.attempts:
        return error.code if error.code in JOB_CODES else None
    last = error.attempts[-1]
    outcome, status = str(last.get("outcome")), last.get("status")
    if status in REJECTION_STATUSES or outcome in UNFIXABLE_OUTCOMES:
        return f"{error.code}/{outcome}"
    return None


Held = list[tuple[int, list[ItemResult]]]
"""Calls with their results, in the order they ended."""


@dataclass(slots=True)
class Streak:
    """The current run of alike unfixable failures, and the such calls held back.

    Every call that failed unfixably is held back from the checkpoint until
    the job ends: a call sent before a run began may still end after its
    first failures, so which calls belong to a run is known only at the stop.
    A stop keeps the calls of its failure out of the checkpoint for good.
    """

    limit: int
    failure: Failure | None = None
    run: int = 0
    first: int = 0
    """The number of the run's first call: calls before it were sent before the run began."""
    held: dict[str, Held] = field(default_factory=dict)

    def add(self, call: int, failure: Failure | None, results: list[ItemResult]) -> Held:
        """Count one ended call (``failure``: its ``unfixable``); the calls to checkpoint now.

        Calls are sent in their numbers' order, so a success of a call sent
        before the run's first failure (and ending after it) breaks no run.
        """
        if failure is None:
            if not self.stops and call > self.first:
                self.failure, self.run = None, 0
            return [(call, results)]
        if self.stops and self.failure is not None and failure.key != self.failure.key:
            return [(call, results)]
        if self.failure is not None and self.failure.key == failure.key:
            self.run += 1
        else:
            self.failure, self.run, self.first = failure, 1, call
        self.held.setdefault(failure.key, []).append((call, results))
        return []

    def release(self) -> Held:
        """Every held call but the stopping failure's (all of them when the job ended)."""
        stopping = self.failure.key if self.stops and self.failure is not None else None
        released = [held for key, calls in self.held.items() if key != stopping for held in calls]
        self.held = {key: calls for key, calls in self.held.items() if key == stopping}
        return released

    @property
    def stops(self) -> bool:
        """Whether the run is long enough to stop the job (never when ``limit`` is 0)."""
        return self.limit > 0 and self.run >= self.limit

    def stopped(self, unsent: int, total: int, *, resumable: bool) -> BatchStopped:
        """The error the stopped job raises: the failure, what to do, what is left to send."""
        assert self.failure is not None
        error, advice = self.failure.error, self.advice()
        message = (
            f"{self.run} calls in a row failed alike, and no retry can fix it: "
            f"{error.code}: {error.message}{'. ' + advice if advice else ''}. "
            f"{unsent} of {total} items have no result"
        )
        if resumable:
            message += (
                "; once it is fixed, run the same job again: it sends those, "
                "and nothing already answered"
            )
        else:
            message += "; without a job directory, a rerun starts over"
        return BatchStopped(message, calls=self.run, unsent=unsent)

    def advice(self) -> str:
        """What to do about the run's failure (empty where its message says it)."""
        assert self.failure is not None
        code, _, outcome = self.failure.key.partition("/")
        return ADVICE.get(code, ADVICE.get(outcome, "fix the cause the message names"))
