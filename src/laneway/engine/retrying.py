"""What a failed attempt leaves behind: where the call may go next, and what it spends.

Pure pieces of the call's decision (``laneway.engine.decision``): the retry
policy's decision, moved to another source where the failed one cannot wait;
the retries and pushbacks it spends; and the lane's in-process marks a
failure sets (a Retry-After's pushback). Time comes in as ``now``.
"""

from __future__ import annotations

import dataclasses
import math
import random

from laneway.core.clock import TimeSource
from laneway.core.errors import AttemptFailure, CallFailed
from laneway.core.failures import SET_ASIDE, FailureKind
from laneway.engine.admission import CallSources
from laneway.engine.callstate import CallState
from laneway.engine.lane import Lane, Source
from laneway.engine.verdicts import given_up
from laneway.policy.deadline import Deadline
from laneway.policy.retry import Decision, GiveUp, Move, Pushback, Retry
from laneway.policy.waits import BACKOFF, PUSHBACK


def after_failure(
    lane: Lane,
    deadline: Deadline,
    state: CallState,
    clock: TimeSource,
    rng: random.Random,
    failed: tuple[Source, AttemptFailure],
) -> CallFailed | None:
    """After the failure just recorded: where and when the call goes next, or its verdict.

    The call may go back to the failed source only after the decision's
    delay (its backoff, or a Retry-After); a source that timed out or
    refused the connection is set aside, one that cannot wait is excluded.
    """
    source, failure = failed
    record = state.attempts[-1]
    decision = retry_decision(lane, deadline, state, failed, clock.now(), rng)
    if isinstance(decision, GiveUp):
        verdict = given_up(lane, deadline, state, clock, failure, decision)
        verdict.__context__ = failure  # the caller's verdict leads back to the last failure
        return verdict
    count_spent(state, decision, failure.label)
    calls = state.sources
    if decision.if_alone is not None:
        calls.excluded.add(source.name)
    elif failure.kind in SET_ASIDE:
        calls.set_aside.add(source.name)
    reason = PUSHBACK if failure.retry_after is not None else BACKOFF
    calls.revisit_after(source.name, clock.now() + decision.delay, reason)
    state.attempts[-1] = dataclasses.replace(record, pushback=isinstance(decision, Pushback))
    state.failed_at = clock.now()
    return None


def retry_decision(
    lane: Lane,
    deadline: Deadline,
    state: CallState,
    failed: tuple[Source, AttemptFailure],
    now: float,
    rng: random.Random,
) -> Decision:
    """The retry policy's decision, moved to another source where the failed one cannot wait.

    A context-length failure is no retry of the same request: the call
    moves, spending nothing, to a source whose declared ``context_window``
    is larger; with none, the call ends on the rejection.
    """
    source, failure = failed
    if failure.kind == FailureKind.CONTEXT_LENGTH:
        exclude_smaller_windows(lane, state.sources, source)
        if not has_alternative(lane, state.sources, source, now):
            return GiveUp("no source with a larger context_window")
        return Move()
    decision = lane.policy.decide(
        failure,
        retries_used=state.retries_used,
        class_used=state.class_retries.get(failure.label, 0),
        pushbacks_used=state.pushbacks_used,
        remaining=deadline.remaining(now),
        rng=rng,
    )
    if isinstance(decision, GiveUp) or decision.if_alone is None:
        return decision
    if has_alternative(lane, state.sources, source, now):
        return decision
    return decision.if_alone


def count_spent(state: CallState, decision: Retry | Pushback | Move, label: str) -> None:
    """Count what trying again costs: a retry (of ``label``'s class), a pushback, or nothing."""
    if isinstance(decision, Move):
        return
    if isinstance(decision, Pushback):
        state.pushbacks_used += 1
        return
    state.retries_used += 1
    state.class_retries[label] = state.class_retries.get(label, 0) + 1


def push_back(lane: Lane, source: Source, seconds: float, now: float) -> None:
    """Keep ``source`` out of the lane's picks for ``seconds``, as its Retry-After asked."""
    marks = lane.memory.pushed_back
    until = now + seconds
    marks[source.key] = max(marks.get(source.key, -math.inf), until)


def has_alternative(lane: Lane, call: CallSources, source: Source, now: float) -> bool:
    """Whether another source can take the call now: ready, not pushed back, not set aside."""
    memory = lane.memory
    return any(
        s.name != source.name
        and s.name not in call.excluded
        and s.name not in call.set_aside
        and not memory.pushed_back_for(s, now)
        for s in lane.runnable
    )


def exclude_smaller_windows(lane: Lane, call: CallSources, failed: Source) -> None:
    """After ``context_length_exceeded``, keep only sources with a declared larger window.

    A source whose ``context_window`` is unknown is no better bet than the
    one that refused, and moving there would be an undeclared second request.
    """
    window = failed.config.context_window
    for source in lane.sources:
        other = source.config.context_window
        if window is None or other is None or other <= window:
            call.excluded.add(source.name)
