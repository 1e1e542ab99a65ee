"""The call loop: admission, attempts, backoff and pushback under one enforced deadline.

The deadline is a cancel scope around the whole call (``Clock.deadline``),
so an attempt, a backoff or an admission wait in flight when it passes is
cancelled, and the caller gets ``DeadlineExceeded`` with the attempts made.
Each attempt gets ``min(attempt_timeout, time left)``.

After a failure the retry policy says whether the call tries again and how
long it must wait before going back to the source that failed (its backoff,
never less than a Retry-After); the call remembers when it may revisit the
source, and ``SourceAdmission`` picks the next attempt's source: the
preferred one once that wait ends, or another at once after a timeout, a
refused connection or a second failure. Waiting (to revisit, for quota, a
concurrency slot, a pushed-back source) spends no attempt. Every admitted
attempt is settled (or released, when cancelled), so no reservation, slot or
probe outlives its attempt. A stream's attempt is the exception: it lasts
until the stream ends, so the loop hands it to the stream (``hold=True``),
which settles it with the stream's real usage.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

from laneway.core.clock import Clock
from laneway.core.errors import AttemptFailure, CallFailed, Inexpressible
from laneway.core.failures import SET_ASIDE, FailureKind
from laneway.core.types import CANCELLED, HEDGE_LOST, HEDGE_WON, Attempt
from laneway.core.units import format_duration
from laneway.engine.admission import Admitted, CallSources, NoSource, SourceAdmission
from laneway.engine.callstate import CallOutcome, CallState, skip, tokens_used
from laneway.engine.lane import Hedging, Lane, Source
from laneway.engine.race import Race, RaceEnd
from laneway.engine.verdicts import (
    call_failed,
    deadline_exceeded,
    pushback_refused,
    source_pushed_back,
    stalled,
    unfit_reason,
    wait_unfit,
)
from laneway.policy.deadline import Deadline
from laneway.policy.retry import Decision, GiveUp, Move, Pushback, Retry
from laneway.policy.waits import BACKOFF, PUSHBACK, Wait, capped, fits, room
from laneway.state.admission.base import SourceStore

T = TypeVar("T")
AttemptFn = Callable[[Source], Awaitable[T]]


class CallLoop:
    """Drives one call: picks sources, bounds attempts, performs policy decisions."""

    def __init__(self, clock: Clock, rng: random.Random | None, store: SourceStore) -> None:
        self.clock = clock
        self.rng = rng or random.Random()
        self.admission = SourceAdmission(store, clock)

    async def run(
        self,
        lane: Lane,
        deadline: Deadline,
        attempt: AttemptFn[T],
        *,
        request_tokens: int | None = None,
        hold: bool = False,
    ) -> CallOutcome[T]:
        """Run ``attempt`` under the lane's policy until success or a verdict.

        ``request_tokens`` (see ``laneway.policy.quota.request_tokens``) sizes
        the quota reservation on sources with a ``tpm``. With ``hold`` the
        successful attempt stays open: its slot and reservation are the
        caller's to settle (``CallOutcome.held``), and so is its record.
        """
        start = self.clock.now()
        state = CallState(start=start, sources=CallSources(started=start))
        if lane.hedging is not None and not hold:
            lane.hedging.budget.called(start)
        try:
            async with self.clock.deadline(deadline.at):
                return await self._attempts(lane, deadline, state, attempt, request_tokens, hold)
        except TimeoutError:
            now = self.clock.now()
            state.cut_in_flight(now)
            attempts = tuple(state.attempts)
            raise deadline_exceeded(
                lane, attempts, now - state.start, deadline.budget, state.waiting
            ) from None

    async def _attempts(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        attempt: AttemptFn[T],
        request_tokens: int | None,
        hold: bool,
    ) -> CallOutcome[T]:
        while True:
            admitted = await self._admitted(lane, deadline, state, request_tokens)
            source, started = admitted.source, admitted.started
            if state.failed_at is not None:
                waited = started - state.failed_at
                state.attempts[-1] = dataclasses.replace(state.attempts[-1], waited=waited)
                state.failed_at = None
            if lane.hedging is not None and not hold:
                done = await self._hedged(
                    lane, lane.hedging, deadline, state, attempt, admitted, request_tokens
                )
                if done is not None:
                    return done
                continue
            state.in_flight = (source.name, started)
            try:
                result = await self._bounded(attempt, source, lane, deadline, started)
            except Inexpressible as refusal:
                state.in_flight = None
                await self.admission.release(admitted)
                skip(state, source, refusal)
                continue
            except AttemptFailure as failure:
                state.in_flight = None
                elapsed = self.clock.now() - started
                failures = state.sources.failures
                failures[source.name] = failures.get(source.name, 0) + 1
                await self.admission.settle(admitted, failure, None)
                self._after_failure(lane, deadline, state, source, failure, elapsed)
                continue
            except BaseException:
                await self.admission.release(admitted)
                raise
            state.in_flight = None
            if hold:
                total = self.clock.now() - state.start
                attempts = tuple(state.attempts)
                return CallOutcome(result, source, attempts, total, state.queue_wait, admitted)
            elapsed = self.clock.now() - started
            await self.admission.settle(admitted, None, tokens_used(result))
            state.attempts.append(Attempt(source.name, "ok", elapsed, status=200))
            total = self.clock.now() - state.start
            return CallOutcome(result, source, tuple(state.attempts), total, state.queue_wait)

    async def _hedged(
        self,
        lane: Lane,
        hedging: Hedging,
        deadline: Deadline,
        state: CallState,
        attempt: AttemptFn[T],
        first: Admitted,
        request_tokens: int | None,
    ) -> CallOutcome[T] | None:
        """One attempt raced by a hedge when it is slow; ``None``: every attempt failed.

        Attempts that end before the race does are settled as they end
        (``_race_end``); after the last failure the retry policy decides as
        after any failure, and the race's other failed source is set aside.
        """

        def bounded(admitted: Admitted) -> Awaitable[T]:
            return self._bounded(attempt, admitted.source, lane, deadline, admitted.started)

        failed: list[RaceEnd[T]] = []

        async def on_end(ended: RaceEnd[T]) -> None:
            await self._race_end(state, ended, failed)

        race = Race(
            self.clock, self.admission, lane, hedging, state, request_tokens, bounded, on_end
        )
        won = await race.run(first, deadline.remaining(first.started))
        if won is not None:
            await self.admission.settle(won.admitted, None, tokens_used(won.result))
            outcome = HEDGE_WON if won.hedge else "ok"
            state.attempts.append(Attempt(won.admitted.source.name, outcome, won.elapsed, 200))
            hedging.answered.add(won.elapsed)
            total, result = self.clock.now() - state.start, cast(T, won.result)
            source = won.admitted.source
            return CallOutcome(result, source, tuple(state.attempts), total, state.queue_wait)
        if not failed:
            return None
        last = failed[-1]
        assert last.failure is not None
        self._decide_next(lane, deadline, state, last.admitted.source, last.failure)
        for other in failed[:-1]:
            name = other.admitted.source.name
            state.sources.set_aside.add(name)
        return None

    async def _race_end(
        self, state: CallState, ended: RaceEnd[T], failed: list[RaceEnd[T]]
    ) -> None:
        """Settle one attempt of a race that ended before the race did."""
        admitted, failure = ended.admitted, ended.failure
        source = admitted.source
        if isinstance(failure, Inexpressible):
            await self.admission.release(admitted)
            skip(state, source, failure)
        elif failure is not None:
            failures = state.sources.failures
            failures[source.name] = failures.get(source.name, 0) + 1
            await self.admission.settle(admitted, failure, None)
            self._note_failure(state, admitted.lane, source, failure, ended.elapsed)
            failed.append(ended)
        else:
            await self.admission.abandon(admitted, None)
            outcome = HEDGE_LOST if ended.hedge else CANCELLED
            state.attempts.append(Attempt(source.name, outcome, ended.elapsed))

    async def _admitted(
        self, lane: Lane, deadline: Deadline, state: CallState, request_tokens: int | None
    ) -> Admitted:
        """The next attempt's source, after waiting as long as admission says.

        The deadline is checked after each pick as well as enforced by the
        cancel scope: a library can swallow the scope's cancellation (Python
        3.11's ``wait_for``, which redis-py awaits, returns a result that races
        the cancel), and the call would then queue on past its deadline.
        """
        while True:
            decision = await self.admission.pick(lane, state.sources, request_tokens)
            if deadline.remaining(self.clock.now()) <= 0:
                if isinstance(decision, Admitted):
                    await self.admission.release(decision)
                raise TimeoutError
            if isinstance(decision, Admitted):
                state.waiting = None
                return decision
            if isinstance(decision, NoSource):
                raise self._no_source(lane, deadline, state, decision)
            remaining = deadline.remaining(self.clock.now())
            if not fits(decision, remaining, lane.policy.min_attempt):
                raise self._unfit(lane, deadline, state, decision)
            state.waiting = decision.reason
            began = self.clock.now()
            await self.admission.wait(
                lane, capped(decision, room(remaining, lane.policy.min_attempt))
            )
            if decision.reason != BACKOFF:
                state.queue_wait += self.clock.now() - began

    def _unfit(self, lane: Lane, deadline: Deadline, state: CallState, wait: Wait) -> CallFailed:
        """The error for a wait that cannot fit in what is left of the deadline, raised at once.

        A Retry-After mark names its source and when it is ready; after an
        upstream failure the call ends on that failure, the unfit wait as
        its reason; with no failure, on the wait itself.
        """
        now = self.clock.now()
        elapsed, attempts = now - state.start, tuple(state.attempts)
        if wait.reason == PUSHBACK and wait.source is not None:
            wall = self.clock.wall()
            return source_pushed_back(lane, attempts, elapsed, deadline.budget, wait, wall)
        left = deadline.remaining(now)
        if state.last_failure is not None:
            reason = unfit_reason(wait, left)
            return call_failed(lane, attempts, elapsed, deadline.budget, state.last_failure, reason)
        return wait_unfit(lane, attempts, elapsed, deadline.budget, wait, left)

    async def _bounded(
        self, attempt: AttemptFn[T], source: Source, lane: Lane, deadline: Deadline, now: float
    ) -> T:
        """One attempt, cut at its own timeout when that comes before the deadline."""
        bound = lane.config.per_attempt
        if bound >= deadline.remaining(now):
            return await attempt(source)
        try:
            async with self.clock.deadline(now + bound):
                return await attempt(source)
        except TimeoutError:
            raise AttemptFailure(
                FailureKind.TIMEOUT, f"no answer within attempt_timeout {format_duration(bound)}"
            ) from None

    def _after_failure(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        source: Source,
        failure: AttemptFailure,
        elapsed: float,
    ) -> None:
        """Record the failure, then say where and when the call goes next, or raise its verdict."""
        self._note_failure(state, lane, source, failure, elapsed)
        self._decide_next(lane, deadline, state, source, failure)

    def _note_failure(
        self, state: CallState, lane: Lane, source: Source, failure: AttemptFailure, elapsed: float
    ) -> None:
        """Record a failed attempt, and its source's Retry-After."""
        state.last_failure = failure
        record = Attempt(
            source.name, failure.label, elapsed, failure.status, message=failure.message
        )
        state.attempts.append(record)
        if failure.retry_after is not None:
            self.admission.push_back(lane, source, failure.retry_after)

    def _decide_next(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        source: Source,
        failure: AttemptFailure,
    ) -> None:
        """After the failure just recorded: where and when the call goes next, or its verdict."""
        record = state.attempts[-1]
        decision = self._decide(lane, deadline, state, source, failure)
        if isinstance(decision, GiveUp):
            raise self._verdict(lane, deadline, state, failure, decision)
        self._spend(state, decision, failure.label)
        calls = state.sources
        if decision.if_alone is not None:
            calls.excluded.add(source.name)
        elif failure.kind in SET_ASIDE:
            calls.set_aside.add(source.name)
        reason = PUSHBACK if failure.retry_after is not None else BACKOFF
        calls.revisit_after(source.name, self.clock.now() + decision.delay, reason)
        state.attempts[-1] = dataclasses.replace(record, pushback=isinstance(decision, Pushback))
        state.failed_at = self.clock.now()

    def _decide(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        source: Source,
        failure: AttemptFailure,
    ) -> Decision:
        """The retry policy's decision, moved to another source where the failed one cannot wait.

        A context-length failure is no retry of the same request: the call
        moves, spending nothing, to a source whose declared ``context_window``
        is larger; with none, the call ends on the rejection.
        """
        if failure.kind == FailureKind.CONTEXT_LENGTH:
            self.admission.exclude_smaller_windows(lane, state.sources, source)
            if not self.admission.has_alternative(lane, state.sources, source):
                return GiveUp("no source with a larger context_window")
            return Move()
        decision = lane.policy.decide(
            failure,
            retries_used=state.retries_used,
            class_used=state.class_retries.get(failure.label, 0),
            pushbacks_used=state.pushbacks_used,
            remaining=deadline.remaining(self.clock.now()),
            rng=self.rng,
        )
        if isinstance(decision, GiveUp) or decision.if_alone is None:
            return decision
        if self.admission.has_alternative(lane, state.sources, source):
            return decision
        return decision.if_alone

    def _spend(self, state: CallState, decision: Retry | Pushback | Move, label: str) -> None:
        if isinstance(decision, Move):
            return
        if isinstance(decision, Pushback):
            state.pushbacks_used += 1
            return
        state.retries_used += 1
        state.class_retries[label] = state.class_retries.get(label, 0) + 1

    def _no_source(
        self, lane: Lane, deadline: Deadline, state: CallState, verdict: NoSource
    ) -> CallFailed:
        elapsed = self.clock.now() - state.start
        attempts = tuple(state.attempts)
        if verdict.stalled:
            return stalled(lane, attempts, elapsed, deadline.budget, verdict.reason, state.waiting)
        return call_failed(
            lane, attempts, elapsed, deadline.budget, state.last_failure, verdict.reason
        )

    def _verdict(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        failure: AttemptFailure,
        verdict: GiveUp,
    ) -> CallFailed:
        elapsed = self.clock.now() - state.start
        attempts, budget = tuple(state.attempts), deadline.budget
        if verdict.pushback:
            wall = self.clock.wall()
            return pushback_refused(lane, attempts, elapsed, budget, failure, verdict, wall)
        return call_failed(lane, attempts, elapsed, budget, failure, verdict.reason)
