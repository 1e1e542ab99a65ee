"""The call loop's decision: after each thing that happens to a call, what it does next.

The shape is tenacity's ``iter()``: the driver (``laneway.engine.call``)
tells ``CallDecision`` what happened (admission picked, an attempt answered,
failed or lost its race, a wait ended) and performs the action it returns
(``laneway.engine.actions``: pick, send, pick and send a hedge, pause, done,
stop). A call without a hedge goes Pick -> Send -> Done, or, after a failure,
Pick again (the retry policy's wait is admission's: the call may go back to
the failed source only after its backoff) until the policy says Stop.

Nothing here awaits or does I/O: time comes from the ``TimeSource`` handed
in and the pick from the driver, so each decision is tested on a
``FakeClock`` with tables of (state, event) -> action
(``tests/engine/test_call_decision.py``). What a decision writes is the
call's own memory (``CallState``) and the lane's in-process marks (a
Retry-After's pushback, the hedge budget and answer times), never the
shared store: admission's reads and writes stay in the driver.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Generic, TypeVar

from laneway.core.clock import TimeSource
from laneway.core.errors import AttemptFailure, CallFailed, Inexpressible
from laneway.core.types import CANCELLED, HEDGE_LOST, HEDGE_WON, Attempt
from laneway.engine.actions import (
    ANSWER,
    HEDGE_DUE,
    PICK,
    Done,
    Pause,
    Pick,
    PickHedge,
    Send,
    SendHedge,
    Stop,
)
from laneway.engine.admission import Admitted, CallSources, NoSource
from laneway.engine.callstate import CallOutcome, CallState
from laneway.engine.lane import Lane, Source
from laneway.engine.retrying import after_failure, push_back
from laneway.engine.verdicts import deadline_exceeded, no_source_left, wait_cannot_fit
from laneway.policy.deadline import Deadline
from laneway.policy.hedge import Hedge, WaitUntil, step
from laneway.policy.waits import BACKOFF, Wait, capped, fits, room

T = TypeVar("T")


class CallDecision(Generic[T]):
    """One call's decisions over its ``state``; each event method returns the next action.

    ``racing``: the lane's hedge races this call's attempts: each attempt
    sent may get a hedge at ``hedge_at`` (the call clock's time; ``inf``:
    none), which the driver starts beside it; ``hedge_sent`` once it did.
    ``hold``: the winning attempt is handed over unsettled (a stream's).
    """

    __slots__ = (
        "_began",
        "_delay",
        "_ended",
        "_first",
        "clock",
        "deadline",
        "hedge_at",
        "hedge_sent",
        "hedging",
        "hold",
        "lane",
        "rng",
        "state",
    )

    def __init__(
        self,
        lane: Lane,
        deadline: Deadline,
        clock: TimeSource,
        rng: random.Random,
        *,
        hold: bool = False,
        racing: bool = False,
    ) -> None:
        start = clock.now()
        self.lane = lane
        self.deadline = deadline
        self.clock = clock
        self.rng = rng
        self.hold = hold
        self.state = CallState(start, [], CallSources(start))
        self._ended: list[tuple[Source, AttemptFailure]] | None = None
        hedging = self.hedging = lane.hedging if racing else None
        if hedging is not None:
            self.hedge_sent = False
            hedging.budget.called(start)

    def picked(self, pick: Admitted | Wait | NoSource) -> Send | Pause | Stop:
        """Admission's answer for the next attempt: send it, wait for it, or end the call.

        The deadline is checked here as well as enforced by the driver's
        cancel scope: a library can swallow the scope's cancellation (Python
        3.11's ``wait_for``, which redis-py awaits, returns a result that races
        the cancel), and the call would then queue on past its deadline.
        """
        now = self.clock.now()
        if self.deadline.at <= now:
            return Stop(self.deadline_passed())
        state = self.state
        if type(pick) is Admitted:
            state.waiting = None
            if state.failed_at is not None:
                waited = pick.started - state.failed_at
                state.attempts[-1] = dataclasses.replace(state.attempts[-1], waited=waited)
                state.failed_at = None
            state.in_flight = (pick.source.name, pick.started)
            hedging = self.hedging
            if hedging is not None:  # the race begins: when its hedge is due (inf: none fits)
                self._first = pick
                self.hedge_sent = False
                limits = hedging.limits
                delay = limits.after
                if delay is None:
                    delay = limits.delay(hedging.answered.times)
                self._delay = delay
                fits_one = delay + self.lane.policy.min_attempt < self.deadline.at - pick.started
                self.hedge_at = pick.started + delay if fits_one else math.inf
            return Send(pick)
        if isinstance(pick, NoSource):
            return Stop(no_source_left(self.lane, self.deadline, state, self.clock, pick))
        assert isinstance(pick, Wait)
        remaining = self.deadline.remaining(now)
        min_attempt = self.lane.policy.min_attempt
        if not fits(pick, remaining, min_attempt):
            return Stop(wait_cannot_fit(self.lane, self.deadline, state, self.clock, pick))
        state.waiting = pick.reason
        self._began = now
        return Pause(now + capped(pick, room(remaining, min_attempt)).seconds, pick.reason)

    def waited(self) -> Pick:
        """A ``Pause`` for admission ended; its time counts as queueing unless it was backoff."""
        if self.state.waiting != BACKOFF:
            self.state.queue_wait += self.clock.now() - self._began
        return PICK

    def answered(self, admitted: Admitted, result: T, *, hedge: bool = False) -> Done[T]:
        """An attempt answered: it wins (the driver cancels any other in flight)."""
        if hedge:
            self.state.hedge_in_flight = None
        else:
            self.state.in_flight = None
        return Done(admitted, result, self.clock.now() - admitted.started, hedge)

    def outcome(self, done: Done[T]) -> CallOutcome[T]:
        """The call's answer once ``done`` is settled (or, held, handed over unsettled)."""
        if self.hold or (
            self.hedging is not None and (self.hedge_sent or self.hedging.limits.after is None)
        ):
            return _raced_or_held(self, done)
        state, admitted = self.state, done.admitted
        attempts = state.attempts
        attempts.append(Attempt(admitted.source.name, "ok", done.elapsed, status=200))
        total = self.clock.now() - state.start
        return CallOutcome(done.result, admitted.source, tuple(attempts), total, state.queue_wait)

    def failed(self, admitted: Admitted, failure: AttemptFailure, *, hedge: bool = False) -> None:
        """An attempt failed: record it (the driver settles it, then asks ``next``)."""
        self._landed(hedge)
        state, source = self.state, admitted.source
        failures = state.sources.failures
        failures[source.name] = failures.get(source.name, 0) + 1
        state.last_failure = failure
        state.attempts.append(
            Attempt(
                source.name,
                failure.label,
                self.clock.now() - admitted.started,
                failure.status,
                message=failure.message,
                began=self._began_of(admitted),
            )
        )
        if failure.retry_after is not None:
            push_back(self.lane, source, failure.retry_after, self.clock.now())
        if self._ended is None:
            self._ended = []
        self._ended.append((source, failure))

    def refused(self, admitted: Admitted, refusal: Inexpressible, *, hedge: bool = False) -> None:
        """The source cannot carry the request: left out for this call, nothing spent.

        Its health is untouched (the driver releases the admission rather than
        settling it); the skip is listed in ``attempts``.
        """
        self._landed(hedge)
        name = admitted.source.name
        self.state.sources.excluded.add(name)
        self.state.attempts.append(Attempt(name, refusal.label, 0.0, message=refusal.message))

    def lost(self, admitted: Admitted, *, hedge: bool) -> None:
        """An attempt was cancelled because another won the race: neither failure nor success."""
        self._landed(hedge)
        elapsed = self.clock.now() - admitted.started
        outcome = HEDGE_LOST if hedge else CANCELLED
        began = self._began_of(admitted)
        self.state.attempts.append(Attempt(admitted.source.name, outcome, elapsed, began=began))

    def landed(self, *, hedge: bool) -> None:
        """An attempt ended in an error the call does not judge (the driver re-raises it)."""
        self._landed(hedge)

    def next(self) -> Pick | PickHedge | Pause | Stop:
        """After an attempt ended without winning: the race's next step, or the call's.

        With another attempt in flight the race goes on. Once none is, the
        retry policy decides on the last failure, as after any failure, and
        the race's other failed sources are set aside; with no failure (a
        skipped source) the call picks again.
        """
        state = self.state
        if state.in_flight is not None or state.hedge_in_flight is not None:
            return self._race_step()
        ended, self._ended = self._ended, None
        if not ended:
            return PICK
        verdict = after_failure(self.lane, self.deadline, state, self.clock, self.rng, ended[-1])
        if verdict is not None:
            return Stop(verdict)
        for other, _ in ended[:-1]:
            state.sources.set_aside.add(other.name)
        return PICK

    def hedge_due(self) -> PickHedge | Pause:
        """The hedge's timer fired: ask for the hedge, unless the attempt it would race has
        ended (the race is over: it failed, or answered) or the budget is spent."""
        if self.state.in_flight is None:
            return Pause(math.inf, ANSWER)
        return self._race_step()

    def hedge_picked(self, pick: Admitted | Wait | NoSource) -> SendHedge | PickHedge | Pause:
        """Admission's answer for the hedge: send it, or (not admitted, not sent) hold on."""
        if type(pick) is Admitted:
            self.state.hedge_in_flight = (pick.source.name, pick.started)
            self.hedge_sent = True
            return SendHedge(pick)
        assert self.hedging is not None
        self.hedging.budget.refund()
        return self._race_step()

    def deadline_passed(self) -> CallFailed:
        """The deadline's verdict, with the attempts it cut recorded."""
        state, now = self.state, self.clock.now()
        state.cut_in_flight(now, state.start if self.hedging and self.hedge_sent else None)
        attempts, budget = tuple(state.attempts), self.deadline.budget
        return deadline_exceeded(self.lane, attempts, now - state.start, budget, state.waiting)

    def _race_step(self) -> PickHedge | Pause:
        """Wait for the attempts in flight until the hedge is due; then ask for the hedge.

        ``hedge_at`` is ``inf`` once the hedge was asked for (or when none fits).
        """
        assert self.hedging is not None and self._first is not None
        now, first = self.clock.now(), self._first
        hedged = self.hedge_at == math.inf
        action = step(first.started, self._delay, now, hedged=hedged, hedgeable=True)
        if isinstance(action, WaitUntil):
            return Pause(action.at, HEDGE_DUE)
        if isinstance(action, Hedge):
            self.hedge_at = math.inf
            if self.hedging.budget.take(now):
                return PickHedge(_without(self.state.sources, first.source.name))
        return Pause(math.inf, ANSWER)

    def _landed(self, hedge: bool) -> None:
        if hedge:
            self.state.hedge_in_flight = None
        else:
            self.state.in_flight = None

    def _began_of(self, admitted: Admitted) -> float | None:
        """When an attempt of a race began, from the call's start (traces draw the race's
        attempts overlapping); ``None`` where no hedge ran beside it."""
        return admitted.started - self.state.start if self.hedging and self.hedge_sent else None


def _raced_or_held(decision: CallDecision[T], done: Done[T]) -> CallOutcome[T]:
    """``CallDecision.outcome`` on a hedged lane (the winner's label and, where a hedge ran
    beside it, when it began; its answer time kept for a percentile ``after``) or of a held
    attempt (handed over unsettled and unlisted)."""
    state, admitted, hedging = decision.state, done.admitted, decision.hedging
    if hedging is not None and hedging.limits.after is None:
        hedging.answered.add(done.elapsed)
    if decision.hold:
        total = decision.clock.now() - state.start
        attempts, queued, source = tuple(state.attempts), state.queue_wait, admitted.source
        return CallOutcome(done.result, source, attempts, total, queued, admitted, done.hedge)
    if decision.hedge_sent:
        label = HEDGE_WON if done.hedge else "ok"
        began = admitted.started - state.start
        attempt = Attempt(admitted.source.name, label, done.elapsed, 200, began=began)
    else:
        attempt = Attempt(admitted.source.name, "ok", done.elapsed, status=200)
    state.attempts.append(attempt)
    total = decision.clock.now() - state.start
    return CallOutcome(done.result, admitted.source, tuple(state.attempts), total, state.queue_wait)


def _without(sources: CallSources, name: str) -> CallSources:
    """The call's sources for a hedge's pick: a copy, the raced attempt's source ``name`` out."""
    return dataclasses.replace(
        sources,
        excluded={*sources.excluded, name},
        failures=dict(sources.failures),
        revisit=dict(sources.revisit),
        set_aside=set(sources.set_aside),
    )
