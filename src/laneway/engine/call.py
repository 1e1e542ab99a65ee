"""The call loop's driver: performs what the call's decision returns, under one deadline.

The decision (``laneway.engine.decision``) is pure: told what happened, it
says what to do next (``laneway.engine.actions``). The driver does the I/O:
it asks admission for sources (``SourceAdmission.pick``, a store round trip),
waits, runs attempts, and settles or releases each admission, so no
reservation, slot or probe outlives its attempt. A stream's attempt is the
exception: it lasts until the stream ends, so the loop hands it to the stream
(``hold=True``), which settles it with the stream's real usage.

The deadline is a cancel scope around the whole call (``Clock.deadline``),
so an attempt, a backoff or an admission wait in flight when it passes is
cancelled, and the caller gets ``DeadlineExceeded`` with the attempts made.
Each attempt gets ``min(attempt_timeout, time left)``.

Each attempt runs in place, awaited by the call's own task. On a hedged lane
(``_raced``) a timer is set for the hedge; if it fires, the hedge runs as a
task beside the attempt (``laneway.engine.race.HedgeRace``): two attempts in
flight, the first answer wins and the other is cancelled, which closes its
connection.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from laneway.core.clock import Clock
from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.failures import FailureKind
from laneway.core.units import format_duration
from laneway.engine.actions import Done, Pause, Send, Stop
from laneway.engine.admission import Admitted, SourceAdmission
from laneway.engine.callstate import CallOutcome, tokens_used
from laneway.engine.decision import CallDecision
from laneway.engine.lane import Lane, Source
from laneway.engine.race import HedgeRace, HedgeWatch
from laneway.policy.deadline import Deadline
from laneway.state.admission.base import SourceStore

T = TypeVar("T")
AttemptFn = Callable[[Source], Awaitable[T]]
Discard = Callable[[T], Awaitable[None]]


class CallLoop:
    """Drives calls: performs each call's decisions with admission, attempts and waits."""

    def __init__(self, clock: Clock, rng: random.Random | None, store: SourceStore) -> None:
        self.clock = clock
        self.rng = rng or random.Random()
        self.admission = SourceAdmission(store, clock)
        self.hedges = HedgeWatch(clock, self.admission, self._bounded)

    async def run(
        self,
        lane: Lane,
        deadline: Deadline,
        attempt: AttemptFn[T],
        *,
        request_tokens: int | None = None,
        hold: bool = False,
        hedged: bool | None = None,
        discard: Discard[T] | None = None,
    ) -> CallOutcome[T]:
        """Run ``attempt`` under the lane's policy until success or a verdict.

        ``request_tokens`` (see ``laneway.policy.quota.request_tokens``) sizes
        the quota reservation on sources with a ``tpm``. With ``hold`` the
        successful attempt stays open: its slot and reservation are the
        caller's to settle (``CallOutcome.held``), and so is its record.

        ``hedged``: whether the lane's hedge races the attempts (default: yes
        unless ``hold``). A held race (a stream's: ``attempt`` returns at the
        first byte) hands over the first attempt to return; ``discard`` closes
        the result of a loser that returned too before it was cancelled.
        """
        racing = lane.hedging is not None and (not hold if hedged is None else hedged)
        decision: CallDecision[T] = CallDecision(
            lane, deadline, self.clock, self.rng, hold=hold, racing=racing
        )
        try:
            async with self.clock.deadline(deadline.at):
                return await self._drive(decision, attempt, request_tokens, discard)
        except TimeoutError:
            raise decision.deadline_passed() from None

    async def _drive(
        self,
        decision: CallDecision[T],
        attempt: AttemptFn[T],
        request_tokens: int | None,
        discard: Discard[T] | None,
    ) -> CallOutcome[T]:
        """Perform the call's decisions: Send each admitted attempt until Done or Stop."""
        lane, admission, deadline = decision.lane, self.admission, decision.deadline
        while True:
            admitted = await self._admitted(decision, request_tokens)
            done: Done[T] | None = None
            if decision.hedging is not None:
                done = await self._raced(decision, admitted, attempt, request_tokens, discard)
            else:
                try:
                    result = await self._bounded(attempt, admitted, lane, deadline)
                except AttemptFailure as failure:
                    await self._failed(decision, admitted, failure)
                except BaseException:
                    await admission.release(admitted)
                    raise
                else:
                    done = decision.answered(admitted, result)
            if done is not None:
                if not decision.hold:
                    await admission.settle(done.admitted, None, tokens_used(done.result))
                return decision.outcome(done)
            after = decision.next()
            if type(after) is Stop:
                raise after.error

    async def _admitted(self, decision: CallDecision[T], request_tokens: int | None) -> Admitted:
        """Perform Pick (and Pause, and Pick again) until the decision says Send, or Stop."""
        lane, admission = decision.lane, self.admission
        while True:
            pick = await admission.pick(lane, decision.state.sources, request_tokens)
            action = decision.picked(pick)
            if type(action) is Send:
                return action.admitted
            if type(action) is Pause:
                await admission.wait(lane, action.until, action.reason)
                decision.waited()
                continue
            assert type(action) is Stop
            if type(pick) is Admitted:
                await admission.release(pick)
            raise action.error

    async def _failed(
        self, decision: CallDecision[T], admitted: Admitted, failure: AttemptFailure
    ) -> None:
        """Tell the decision of a failed attempt (or a skipped source), then settle it."""
        if isinstance(failure, Inexpressible):
            decision.refused(admitted, failure)
            await self.admission.release(admitted)
            return
        decision.failed(admitted, failure)
        await self.admission.settle(admitted, failure, None)

    async def _raced(
        self,
        decision: CallDecision[T],
        admitted: Admitted,
        attempt: AttemptFn[T],
        request_tokens: int | None,
        discard: Discard[T] | None,
    ) -> Done[T] | None:
        """One attempt on a hedged lane, raced by its hedge if it is due; the winner, if any.

        Each way the attempt ends first takes it out of the watch (``leave``),
        before anything else is awaited: the hedge may no longer cut it.
        """
        watch = self.hedges
        if decision.hedge_at < math.inf:
            watch.enter(decision, attempt, request_tokens, discard)
        race: HedgeRace[T] | None = None
        try:
            try:
                result = await self._bounded(attempt, admitted, decision.lane, decision.deadline)
            finally:
                race = watch.leave(decision)
        except asyncio.CancelledError:
            if race is not None and race.took_over():
                return await self._hedge_won(decision, admitted, race)
            await self._abort(admitted, race)
            raise
        except AttemptFailure as failure:
            await self._failed(decision, admitted, failure)
            return None if race is None else await race.rest()
        except BaseException:
            await self._abort(admitted, race)
            raise
        done = decision.answered(admitted, result)
        if race is not None:
            try:
                await race.lose()
            except BaseException:
                await self._abort(admitted, race)
                raise
        return done

    async def _abort(self, admitted: Admitted, race: HedgeRace[T] | None) -> None:
        """The call is cancelled or broken mid-attempt: give back the attempt and its hedge."""
        await self.admission.release(admitted)
        if race is not None:
            await race.abort()

    async def _hedge_won(
        self, decision: CallDecision[T], first: Admitted, race: HedgeRace[T]
    ) -> Done[T]:
        """The hedge answered while the first attempt ran: the first, cancelled, lost.

        When the hedge broke instead (an error the call does not judge), the
        call ends with that error, the first attempt given back.
        """
        if race.error is not None:
            await self.admission.release(first)
            raise race.error
        decision.lost(first, hedge=False)
        await self.admission.abandon(first, None)
        won = race.won
        assert won is not None, "the race was taken over by the hedge's answer"
        return won

    async def _bounded(
        self, attempt: AttemptFn[T], admitted: Admitted, lane: Lane, deadline: Deadline
    ) -> T:
        """One attempt, cut at its own timeout when that comes before the deadline."""
        bound = lane.config.per_attempt
        if bound >= deadline.remaining(admitted.started):
            return await attempt(admitted.source)
        try:
            async with self.clock.deadline(admitted.started + bound):
                return await attempt(admitted.source)
        except TimeoutError:
            raise AttemptFailure(
                FailureKind.TIMEOUT, f"no answer within attempt_timeout {format_duration(bound)}"
            ) from None
