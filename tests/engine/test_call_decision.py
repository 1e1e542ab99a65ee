"""The call loop's decision on a fake clock, no event loop: tables of (state, event) -> action."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from laneway.app import build_lane
from laneway.config.models import ChatLaneConfig
from laneway.core.clock import FakeClock
from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    ContextLengthExceeded,
    DeadlineExceeded,
    Inexpressible,
    PushbackRefused,
    Stalled,
    UpstreamFailed,
    UpstreamRejected,
)
from laneway.core.failures import FailureKind
from laneway.engine.actions import ANSWER, HEDGE_DUE, PICK, Done, Pause, PickHedge, Send, Stop
from laneway.engine.admission import Admitted, NoSource
from laneway.engine.decision import CallDecision
from laneway.engine.lane import Lane
from laneway.policy.deadline import Deadline
from laneway.policy.waits import BACKOFF, PUSHBACK, Wait
from laneway.state.admission.base import Ask

SOURCES = [
    {"name": "a", "base_url": "http://127.0.0.1:1/v1", "model": "m"},
    {"name": "b", "base_url": "http://127.0.0.1:2/v1", "model": "m", "priority": 1},
]


def lane_of(**settings: Any) -> Lane:
    config = {"sources": SOURCES, "deadline": "10s", "attempt_timeout": "4s", **settings}
    return build_lane("l", ChatLaneConfig.model_validate(config), {})


def decision_on(lane: Lane, clock: FakeClock, **kw: Any) -> CallDecision[str]:
    deadline = Deadline.after(clock.now(), lane.config.deadline)
    return CallDecision(lane, deadline, clock, random.Random(0), **kw)


def admitted(lane: Lane, name: str, clock: FakeClock) -> Admitted:
    source = lane.named[name]
    return Admitted(lane, source, Ask(source.key, f"t-{name}"), clock.now())


def status(code: int, retry_after: float | None = None) -> AttemptFailure:
    kind = FailureKind.REJECTED if code in (400, 422) else FailureKind.STATUS
    return AttemptFailure(kind, f"upstream answered {code}", code, retry_after)


def rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 9)


def stopped_with(action: object) -> type[CallFailed]:
    assert isinstance(action, Stop), action
    return type(action.error)


# --- admission's answer -> the next action --------------------------------------------------

PICKS: list[tuple[str, Any, object]] = [
    ("a wait for quota that fits", Wait(1.0, "quota"), Pause(1001.0, "quota")),
    ("a wait only a release ends", Wait(math.inf, "concurrency"), Pause(1009.75, "concurrency")),
    ("a breaker's wait past the room", Wait(20.0, "breaker"), DeadlineExceeded),
    ("a pushback past the deadline", Wait(20.0, PUSHBACK, "a"), PushbackRefused),
    ("no source left", NoSource("no source left to try"), UpstreamFailed),
    ("the stall verdict", NoSource("nothing in the lane succeeded", stalled=True), Stalled),
]


@pytest.mark.parametrize(("name", "pick", "expected"), PICKS, ids=[row[0] for row in PICKS])
def test_what_a_pick_becomes(name: str, pick: Any, expected: object) -> None:
    clock = FakeClock(start=1000.0)
    decision = decision_on(lane_of(), clock)
    action = decision.picked(pick)
    if isinstance(expected, type):
        assert stopped_with(action) is expected
    else:
        assert action == expected


def test_an_admitted_source_is_sent_and_in_flight() -> None:
    clock = FakeClock()
    lane = lane_of()
    decision = decision_on(lane, clock)
    first = admitted(lane, "a", clock)
    assert decision.picked(first) == Send(first)
    assert decision.state.in_flight == ("a", clock.now())


def test_a_pick_after_the_deadline_stops_the_call_whatever_it_admitted() -> None:
    clock = FakeClock()
    lane = lane_of()
    decision = decision_on(lane, clock)
    clock.advance(10.0)
    assert stopped_with(decision.picked(admitted(lane, "a", clock))) is DeadlineExceeded


def test_queue_wait_counts_admission_waits_but_not_backoff() -> None:
    clock = FakeClock()
    decision = decision_on(lane_of(), clock)
    decision.picked(Wait(0.5, "quota"))
    clock.advance(0.5)
    assert decision.waited() is PICK
    decision.picked(Wait(0.25, BACKOFF))
    clock.advance(0.25)
    decision.waited()
    assert decision.state.queue_wait == pytest.approx(0.5)


# --- an attempt's failure -> the next action ------------------------------------------------

RETRY_503 = {"retries": 1, "retry_on": [503], "backoff": {"base": "1s"}}
FAILURES: list[tuple[str, dict[str, Any], AttemptFailure, object]] = [
    ("503 with a retry left", RETRY_503, status(503), PICK),
    ("503 not in retry_on", {}, status(503), UpstreamFailed),
    ("a rejection is never retried", RETRY_503, status(400), UpstreamRejected),
    (
        "a Retry-After over max_pushback_wait, another source",
        {"max_pushbacks": 1},
        status(429, retry_after=120.0),
        PICK,
    ),
    (
        "a Retry-After over max_pushback_wait, alone",
        {"max_pushbacks": 1, "sources": SOURCES[:1]},
        status(429, retry_after=120.0),
        PushbackRefused,
    ),
    (
        "over the window, no larger source",
        RETRY_503,
        AttemptFailure(FailureKind.CONTEXT_LENGTH, "too long", 400),
        ContextLengthExceeded,
    ),
]


@pytest.mark.parametrize(
    ("name", "settings", "failure", "expected"), FAILURES, ids=[row[0] for row in FAILURES]
)
def test_what_a_failure_becomes(
    name: str, settings: dict[str, Any], failure: AttemptFailure, expected: object
) -> None:
    clock = FakeClock()
    lane = lane_of(**settings)
    decision = decision_on(lane, clock)
    first = admitted(lane, "a", clock)
    decision.picked(first)
    clock.advance(0.1)
    decision.failed(first, failure)
    action = decision.next()
    if isinstance(expected, type):
        assert stopped_with(action) is expected
    else:
        assert action == expected
    assert decision.state.in_flight is None
    assert decision.state.attempts[0].outcome == failure.label


def test_a_retry_spends_one_and_revisits_the_source_after_its_backoff() -> None:
    clock = FakeClock()
    lane = lane_of(**RETRY_503)
    decision = decision_on(lane, clock)
    first = admitted(lane, "a", clock)
    decision.picked(first)
    decision.failed(first, status(503))
    assert decision.next() is PICK
    state = decision.state
    assert (state.retries_used, state.class_retries) == (1, {"503": 1})
    until, reason = state.sources.revisit["a"]
    assert reason == BACKOFF and 1000.0 < until <= 1001.0
    clock.advance(0.4)
    second = admitted(lane, "b", clock)
    assert decision.picked(second) == Send(second)
    assert state.attempts[0].waited == pytest.approx(0.4)


def test_a_timeout_sets_its_source_aside() -> None:
    clock = FakeClock()
    lane = lane_of(retries=1, retry_on=["timeout"])
    decision = decision_on(lane, clock)
    first = admitted(lane, "a", clock)
    decision.picked(first)
    decision.failed(first, AttemptFailure(FailureKind.TIMEOUT, "no answer"))
    assert decision.next() is PICK
    assert decision.state.sources.set_aside == {"a"}


def test_a_source_that_cannot_carry_the_request_is_skipped_spending_nothing() -> None:
    clock = FakeClock()
    lane = lane_of()
    decision = decision_on(lane, clock)
    first = admitted(lane, "a", clock)
    decision.picked(first)
    decision.refused(first, Inexpressible("tools", "not supported"))
    assert decision.next() is PICK
    assert decision.state.sources.excluded == {"a"}
    assert decision.state.retries_used == 0


def test_an_answer_is_done_and_the_outcome_lists_it() -> None:
    clock = FakeClock()
    lane = lane_of()
    decision = decision_on(lane, clock)
    first = admitted(lane, "a", clock)
    decision.picked(first)
    clock.advance(0.25)
    done = decision.answered(first, "answer")
    assert done == Done(first, "answer", 0.25)
    outcome = decision.outcome(done)
    assert [(a.source, a.outcome, a.began) for a in outcome.attempts] == [("a", "ok", None)]
    assert outcome.result == "answer" and outcome.held is None


def test_a_held_answer_is_handed_over_unsettled_and_unlisted() -> None:
    clock = FakeClock()
    lane = lane_of()
    decision = decision_on(lane, clock, hold=True)
    first = admitted(lane, "a", clock)
    decision.picked(first)
    outcome = decision.outcome(decision.answered(first, "stream"))
    assert outcome.held == first and outcome.attempts == ()


# --- a hedged lane: the race -------------------------------------------------------------------

HEDGED = {"hedge": {"after": "200ms", "max_share": 1.0}}


def racing(clock: FakeClock, **settings: Any) -> tuple[Lane, CallDecision[str], Admitted]:
    lane = lane_of(**{**HEDGED, **settings})
    decision = decision_on(lane, clock, racing=True)
    first = admitted(lane, "a", clock)
    assert decision.picked(first) == Send(first)
    return lane, decision, first


def test_the_hedge_is_due_after_its_delay_on_another_source() -> None:
    clock = FakeClock()
    lane, decision, first = racing(clock)
    assert decision.hedge_at == first.started + 0.2
    assert decision.next() == Pause(first.started + 0.2, HEDGE_DUE)
    clock.advance(0.2)
    action = decision.next()
    assert isinstance(action, PickHedge)
    assert "a" in action.sources.excluded and "a" not in decision.state.sources.excluded
    hedge = admitted(lane, "b", clock)
    assert decision.hedge_picked(hedge).admitted == hedge  # type: ignore[union-attr]
    assert decision.state.hedge_in_flight == ("b", clock.now())
    assert decision.next() == Pause(math.inf, ANSWER)


def test_the_hedge_that_answers_first_wins_and_the_first_attempt_is_cancelled() -> None:
    clock = FakeClock()
    lane, decision, first = racing(clock)
    clock.advance(0.2)
    decision.next()
    hedge = admitted(lane, "b", clock)
    decision.hedge_picked(hedge)
    clock.advance(0.05)
    done = decision.answered(hedge, "fast", hedge=True)
    decision.lost(first, hedge=False)
    outcome = decision.outcome(done)
    rows = [(a.source, a.outcome, rounded(a.began), rounded(a.elapsed)) for a in outcome.attempts]
    assert rows == [("a", "cancelled", 0.0, 0.25), ("b", "hedge_won", 0.2, 0.05)]
    assert lane.hedging is not None and list(lane.hedging.answered.times) == [], "fixed after"


def test_a_percentile_after_keeps_each_answer_time() -> None:
    clock = FakeClock()
    lane, decision, first = racing(clock, hedge={"after": "p95", "max_share": 1.0})
    assert decision.hedge_at == first.started + 2.0, "the cap (half of 4s) until 20 samples"
    clock.advance(0.25)
    decision.outcome(decision.answered(first, "answer"))
    assert lane.hedging is not None and list(lane.hedging.answered.times) == [0.25]


def test_an_empty_budget_or_a_hedge_not_admitted_means_no_hedge() -> None:
    clock = FakeClock()
    lane, decision, _ = racing(clock, hedge={"after": "200ms", "max_share": 0.0})
    clock.advance(0.2)
    assert decision.next() == Pause(math.inf, ANSWER)
    clock = FakeClock()
    lane, decision, _ = racing(clock)
    clock.advance(0.2)
    assert isinstance(decision.next(), PickHedge)
    assert lane.hedging is not None and len(lane.hedging.budget.hedges) == 1
    assert decision.hedge_picked(Wait(1.0, "quota")) == Pause(math.inf, ANSWER)
    assert len(lane.hedging.budget.hedges) == 0, "refunded: not admitted, not sent"


def test_no_hedge_when_the_deadline_leaves_no_room_for_one() -> None:
    clock = FakeClock()
    _, decision, _ = racing(clock, deadline="400ms", min_attempt="250ms")
    assert decision.hedge_at == math.inf
    assert decision.next() == Pause(math.inf, ANSWER)


def test_the_race_decides_after_its_last_failure_and_sets_the_other_aside() -> None:
    clock = FakeClock()
    lane, decision, first = racing(clock, retries=1, retry_on=[503])
    clock.advance(0.2)
    decision.next()
    hedge = admitted(lane, "b", clock)
    decision.hedge_picked(hedge)
    decision.failed(first, status(503))
    assert decision.next() == Pause(math.inf, ANSWER), "the hedge still runs"
    decision.failed(hedge, status(503), hedge=True)
    assert decision.next() is PICK
    assert decision.state.sources.set_aside == {"a"}
    assert decision.state.retries_used == 1


def test_the_deadline_cuts_both_attempts_of_a_race() -> None:
    clock = FakeClock()
    lane, decision, _ = racing(clock)
    clock.advance(0.2)
    decision.next()
    decision.hedge_picked(admitted(lane, "b", clock))
    clock.advance(9.8)
    error = decision.deadline_passed()
    rows = [(a.source, a.outcome, rounded(a.began)) for a in error.attempts]
    assert rows == [("a", "deadline", 0.0), ("b", "deadline", 0.2)]


def test_the_decision_modules_await_nothing() -> None:
    """The contract in pyproject.toml keeps asyncio out; this keeps coroutines out."""
    import ast
    import inspect

    from laneway.engine import actions, decision, retrying

    for module in (actions, decision, retrying):
        tree = ast.parse(inspect.getsource(module))
        awaiting = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncWith | ast.AsyncFor)
        ]
        assert awaiting == [], module.__name__


def test_the_hedge_timer_asks_for_the_hedge_only_while_the_first_attempt_runs() -> None:
    clock = FakeClock()
    _, decision, first = racing(clock)
    decision.next()
    clock.advance(0.2)
    assert isinstance(decision.hedge_due(), PickHedge)
    clock = FakeClock()
    _, decision, first = racing(clock)
    decision.next()
    clock.advance(0.2)
    decision.failed(first, status(503))
    assert decision.hedge_due() == Pause(math.inf, ANSWER), "the race is over: no hedge"
