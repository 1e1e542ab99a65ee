"""The typed error a call ends with, built from what the call did.

One place maps an ending (the last failure, a stall, the deadline) to the
error tree of ``laneway.core.errors``, so every path of the call loop names
its errors alike.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from laneway.core.clock import TimeSource
from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    ContextLengthExceeded,
    DeadlineExceeded,
    DimensionMismatch,
    PushbackRefused,
    Stalled,
    UpstreamFailed,
    UpstreamRejected,
    UpstreamTimeout,
)
from laneway.core.failures import FailureKind
from laneway.core.types import Attempt
from laneway.core.units import format_duration
from laneway.engine.admission import NoSource
from laneway.engine.callstate import CallState
from laneway.engine.lane import Lane
from laneway.policy.deadline import Deadline
from laneway.policy.retry import GiveUp
from laneway.policy.waits import PUSHBACK, Wait


def given_up(
    lane: Lane,
    deadline: Deadline,
    state: CallState,
    clock: TimeSource,
    failure: AttemptFailure,
    verdict: GiveUp,
) -> CallFailed:
    """The error for a call the retry policy ended after ``failure``: a refused
    Retry-After says when the source is ready; any other ``verdict`` names its reason."""
    elapsed, attempts, budget = clock.now() - state.start, tuple(state.attempts), deadline.budget
    if verdict.pushback:
        wall = clock.wall()
        return pushback_refused(lane, attempts, elapsed, budget, failure, verdict, wall)
    return call_failed(lane, attempts, elapsed, budget, failure, verdict.reason)


def no_source_left(
    lane: Lane, deadline: Deadline, state: CallState, clock: TimeSource, verdict: NoSource
) -> CallFailed:
    """The error for a call no source will run: the stall verdict, or the last failure."""
    elapsed, attempts, budget = clock.now() - state.start, tuple(state.attempts), deadline.budget
    if verdict.stalled:
        return stalled(lane, attempts, elapsed, budget, verdict.reason, state.waiting)
    return call_failed(lane, attempts, elapsed, budget, state.last_failure, verdict.reason)


def wait_cannot_fit(
    lane: Lane, deadline: Deadline, state: CallState, clock: TimeSource, wait: Wait
) -> CallFailed:
    """The error for a wait that cannot fit in what is left of the deadline, raised at once.

    A Retry-After mark names its source and when it is ready; after an
    upstream failure the call ends on that failure, the unfit wait as
    its reason; with no failure, on the wait itself.
    """
    now = clock.now()
    elapsed, attempts, budget = now - state.start, tuple(state.attempts), deadline.budget
    if wait.reason == PUSHBACK and wait.source is not None:
        return source_pushed_back(lane, attempts, elapsed, budget, wait, clock.wall())
    left = deadline.remaining(now)
    if state.last_failure is not None:
        reason = unfit_reason(wait, left)
        return call_failed(lane, attempts, elapsed, budget, state.last_failure, reason)
    return wait_unfit(lane, attempts, elapsed, budget, wait, left)


def call_failed(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    failure: AttemptFailure | None,
    reason: str,
) -> CallFailed:
    """The error for a call that ends on ``failure`` (the last attempt's) for ``reason``.

    ``budget`` is the call's deadline in seconds (the lane's, or the caller's
    when tighter).
    """
    kw = _facts(lane, attempts, elapsed, budget)
    detail = failure.message if failure is not None else "no attempt was made"
    message = f"lane {lane.name}: {detail} ({reason})"
    kind = failure.kind if failure is not None else None
    if kind == FailureKind.TIMEOUT:
        return UpstreamTimeout(message, **kw)
    if kind == FailureKind.CONTEXT_LENGTH:
        return ContextLengthExceeded(message, body=failure.body if failure else None, **kw)
    if kind == FailureKind.REJECTED:
        return UpstreamRejected(message, body=failure.body if failure else None, **kw)
    if kind == FailureKind.DIMENSION:
        return DimensionMismatch(message, **kw)
    return UpstreamFailed(message, **kw)


def pushback_refused(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    failure: AttemptFailure,
    verdict: GiveUp,
    wall: float,
) -> PushbackRefused:
    """The source that failed last asked for a wait the call cannot make (``verdict``)."""
    source = attempts[-1].source if attempts else "?"
    ready_in = verdict.ready_in or 0.0
    message = (
        f"lane {lane.name}: {failure.message} (source {source} asked to wait "
        f"{format_duration(ready_in)}, ready {_ready_at(wall, ready_in)}: {verdict.reason})"
    )
    return PushbackRefused(message, ready_in=ready_in, **_facts(lane, attempts, elapsed, budget))


def source_pushed_back(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    wait: Wait,
    wall: float,
) -> PushbackRefused:
    """The only source the call could wait for is pushed back past the call's deadline."""
    message = (
        f"lane {lane.name}: source {wait.source} is pushed back by its Retry-After for "
        f"{format_duration(wait.seconds)} more (ready {_ready_at(wall, wait.seconds)}), "
        f"past this call's deadline of {format_duration(budget)}"
    )
    facts = _facts(lane, attempts, elapsed, budget)
    return PushbackRefused(message, ready_in=wait.seconds, **facts)


def stalled(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    reason: str,
    waiting: str | None,
) -> Stalled:
    """The stall verdict: the lane made no progress while the call waited."""
    message = f"lane {lane.name}: {reason}{_waiting(waiting)}"
    return Stalled(message, **_facts(lane, attempts, elapsed, budget))


def unfit_reason(wait: Wait, left: float) -> str:
    """Why a call stopped rather than wait: the wait, and what is left of its deadline."""
    length = "until a slot frees" if math.isinf(wait.seconds) else format_duration(wait.seconds)
    return (
        f"waiting for {wait.reason} ({length}) would not fit in the "
        f"{format_duration(max(left, 0.0))} left before the deadline"
    )


def wait_unfit(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    wait: Wait,
    left: float,
) -> DeadlineExceeded:
    """No attempt failed, and the wait a gate asks for cannot fit: the call ends at once."""
    message = (
        f"lane {lane.name}: {unfit_reason(wait, left)} of {format_duration(budget)}; "
        f"{len(attempts)} attempt(s) made"
    )
    return DeadlineExceeded(message, **_facts(lane, attempts, elapsed, budget))


SPENT_BUDGET = 0.0005
"""A call budget below this (it would read "0ms") was spent before it began."""


def deadline_exceeded(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    waiting: str | None,
) -> DeadlineExceeded:
    """The deadline passed; ``waiting`` names what the call was waiting for, if anything.

    A budget under a millisecond is a caller's deadline that the server's
    ``deadline_margin`` used up: said so, rather than as a deadline of "0ms".
    """
    if budget < SPENT_BUDGET:
        message = (
            f"lane {lane.name}: the caller's deadline left no time to call an upstream "
            "(it was at or below server.deadline_margin, which laneway keeps to answer in "
            f"time); {len(attempts)} attempt(s) made"
        )
    else:
        message = (
            f"lane {lane.name}: deadline of {format_duration(budget)} passed after "
            f"{len(attempts)} attempt(s){_waiting(waiting)}"
        )
    return DeadlineExceeded(message, **_facts(lane, attempts, elapsed, budget))


def _facts(
    lane: Lane, attempts: tuple[Attempt, ...], elapsed: float, budget: float
) -> dict[str, Any]:
    deadline = budget if math.isfinite(budget) else None
    return {"lane": lane.name, "attempts": attempts, "elapsed": elapsed, "deadline": deadline}


def _ready_at(wall: float, seconds: float) -> str:
    """When a wait of ``seconds`` from ``wall`` ends, as a UTC time of day."""
    at = datetime.datetime.fromtimestamp(wall + seconds, tz=datetime.UTC)
    return f"at {at:%H:%M:%S} UTC"


def _waiting(waiting: str | None) -> str:
    return f" while waiting for {waiting}" if waiting else ""
