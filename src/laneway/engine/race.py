"""Hedges of attempts in flight: one timer for them all, and a task for each hedge that starts.

An attempt runs in place, awaited by its call's own task, as on a lane
without a hedge. When the decision gives it a hedge time (``Send.hedge_at``),
the driver enters it in the call loop's ``HedgeWatch`` and takes it out as
soon as the attempt ends. The watch holds one timer, set for the earliest
hedge time of the attempts it holds; with the same ``after`` for every call
of a lane, a call that starts later is due later, so the timer set for an
earlier call serves it too (it fires, finds nothing due, and is set again
for the next). A hedge that never fires therefore costs a call two
dictionary operations, no timer and no task.

When an attempt's hedge is due, the watch makes its ``HedgeRace``: a task
asks the decision (``hedge_due``: the budget, the attempt still in flight),
picks another source and sends the hedge. The first answer wins:

- the hedge answers while the first attempt runs: the task cancels the
  caller's await of the first attempt (closing its connection), as
  ``asyncio.timeout`` cancels its body, and ``took_over`` tells the driver
  that cancellation was the race's, not the caller's or the deadline's;
- the first attempt answers: ``lose`` cancels the hedge (or, answered too,
  discards its answer) and counts it lost;
- the first attempt fails: ``rest`` waits for the hedge.

Each hedge ending is judged and settled in its task as it ends, so a failure
counts for the breaker at once. ``abort`` stops everything when the call
itself is cancelled. For a stream, the attempt returns at its first byte, so
the first first byte wins, and ``discard`` closes a losing stream that
opened too.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from laneway.core.clock import Clock, Timer
from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.engine.actions import Done, PickHedge, SendHedge
from laneway.engine.admission import Admitted, SourceAdmission
from laneway.engine.decision import CallDecision
from laneway.engine.lane import Lane, Source
from laneway.policy.deadline import Deadline

T = TypeVar("T")
Sender = Callable[[Admitted], Awaitable[T]]
Discard = Callable[[T], Awaitable[None]]
AttemptFn = Callable[[Source], Awaitable[T]]
Bounded = Callable[[AttemptFn[Any], Admitted, Lane, Deadline], Awaitable[Any]]
"""``CallLoop._bounded``: one attempt, cut at its own timeout."""


class HedgeRace(Generic[T]):
    """One attempt's hedge, started: its task, and how the race with the first attempt ended."""

    __slots__ = (
        "_baseline",
        "_interrupted",
        "aborting",
        "admission",
        "call",
        "decision",
        "discard",
        "error",
        "first_running",
        "over",
        "send",
        "task",
        "tokens",
        "won",
    )

    def __init__(
        self,
        decision: CallDecision[T],
        call: asyncio.Task[Any],
        admission: SourceAdmission,
        send: Sender[T],
        tokens: int | None,
        discard: Discard[T] | None,
    ) -> None:
        self.decision, self.call, self.admission, self.send = decision, call, admission, send
        self.tokens, self.discard = tokens, discard
        self._baseline, self._interrupted = call.cancelling(), False
        self.won: Done[T] | None = None
        self.error: BaseException | None = None
        self.first_running, self.over, self.aborting = True, False, False
        self.task = asyncio.ensure_future(self._hedge())

    def took_over(self) -> bool:
        """Whether the cancellation the first attempt met was the race's (the hedge won or
        broke), not the caller's or the deadline's, which must go on."""
        if not self._interrupted:
            return False
        self._interrupted = False
        return self.call.uncancel() <= self._baseline

    async def lose(self) -> None:
        """The first attempt answered: the hedge, if sent, is cancelled (or discarded) and lost."""
        self.over = True
        task = self.task
        if self.decision.state.hedge_in_flight is not None:
            task.cancel()
        await asyncio.wait({task})
        won, self.won = self.won, None
        if won is not None:
            if self.discard is not None:
                await self.discard(won.result)
            self.decision.lost(won.admitted, hedge=True)
            await self.admission.abandon(won.admitted, None)

    async def rest(self) -> Done[T] | None:
        """The first attempt failed: the hedge's answer, or ``None``."""
        await asyncio.wait({self.task})
        if self.error is not None:
            raise self.error
        won, self.won = self.won, None
        return won

    async def abort(self) -> None:
        """The call is cancelled or broken: stop the hedge and give back its admission."""
        self.aborting = True
        self.task.cancel()
        await asyncio.wait({self.task})
        won, self.won = self.won, None
        if won is not None:
            await self.admission.release(won.admitted)

    async def _hedge(self) -> None:
        """The hedge's task: admitted on another source, sent, judged and settled as it ends."""
        decision, admission = self.decision, self.admission
        wanted = decision.hedge_due()
        if type(wanted) is not PickHedge:
            return
        pick = await admission.pick(decision.lane, wanted.sources, self.tokens)
        sent = decision.hedge_picked(pick)
        if type(sent) is not SendHedge:
            return
        admitted = sent.admitted
        if self.over:
            decision.lost(admitted, hedge=True)
            await admission.abandon(admitted, None)
            return
        try:
            result = await self.send(admitted)
        except asyncio.CancelledError:
            if self.aborting:
                await admission.release(admitted)
                raise
            decision.lost(admitted, hedge=True)
            await admission.abandon(admitted, None)
        except Inexpressible as refusal:
            decision.refused(admitted, refusal, hedge=True)
            await admission.release(admitted)
        except AttemptFailure as failure:
            decision.failed(admitted, failure, hedge=True)
            await admission.settle(admitted, failure, None)
        except BaseException as error:  # a bug in the attempt: the call ends with it
            decision.landed(hedge=True)
            await admission.release(admitted)
            self.error = error
            self._interrupt()
        else:
            self.won = decision.answered(admitted, result, hedge=True)
            self._interrupt()

    def _interrupt(self) -> None:
        """Cut the caller's await of the first attempt, if it still runs: the race is decided."""
        if self.first_running and not self.aborting:
            self._interrupted = True
            self.call.cancel()


class HedgeWatch:
    """The attempts in flight that a hedge may race, and one timer for the earliest hedge time.

    ``enter`` an attempt as it starts, ``leave`` it the moment it ends: the
    ``HedgeRace`` its hedge started, if the hedge was due meanwhile.
    """

    __slots__ = ("_at", "_loop", "_timer", "admission", "bounded", "clock", "races", "waiting")

    def __init__(self, clock: Clock, admission: SourceAdmission, bounded: Bounded) -> None:
        self.clock, self.admission, self.bounded = clock, admission, bounded
        self._loop: asyncio.AbstractEventLoop | None = None
        self.waiting: dict[CallDecision[Any], tuple[Any, ...]] = {}
        self.races: dict[CallDecision[Any], HedgeRace[Any]] = {}
        self._timer: Timer | None = None
        self._at = math.inf

    def enter(
        self,
        decision: CallDecision[T],
        attempt: AttemptFn[T],
        tokens: int | None,
        discard: Discard[T] | None,
    ) -> None:
        """Hold ``decision``'s attempt in flight until its hedge time (``decision.hedge_at``)."""
        call = asyncio.current_task()
        assert call is not None, "an attempt runs in a task"
        self.waiting[decision] = (call, attempt, tokens, discard)
        loop = call.get_loop()
        if decision.hedge_at < self._at or loop is not self._loop:
            self._loop = loop
            self._arm(decision.hedge_at)

    def leave(self, decision: CallDecision[T]) -> HedgeRace[T] | None:
        """The attempt ended: its race, if its hedge started (the hedge may no longer cut it)."""
        if self.waiting.pop(decision, None) is not None:
            return None
        race = self.races.pop(decision, None)
        if race is not None:
            race.first_running = False
        return race

    def _sender(self, decision: CallDecision[T], attempt: AttemptFn[T]) -> Sender[T]:
        lane, deadline, bounded = decision.lane, decision.deadline, self.bounded

        def send(admitted: Admitted) -> Awaitable[T]:
            return bounded(attempt, admitted, lane, deadline)

        return send

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = at
        self._timer = self.clock.call_at(at, self._fire)

    def _fire(self) -> None:
        """The timer rang: start the due hedges one turn of the loop later, so an attempt that
        answers at the very instant its hedge is due wins the tie (its wake-up is queued first)."""
        self._timer, self._at = None, math.inf
        assert self._loop is not None, "the timer was set on a loop"
        self._loop.call_soon(self._start_due)

    def _start_due(self) -> None:
        """Start the hedges that are due; set the timer for the next hedge time."""
        now, soonest = self.clock.now(), math.inf
        for decision, held in list(self.waiting.items()):
            if decision.hedge_at > now:
                soonest = min(soonest, decision.hedge_at)
                continue
            del self.waiting[decision]
            call, attempt, tokens, discard = held
            send = self._sender(decision, attempt)
            self.races[decision] = HedgeRace(decision, call, self.admission, send, tokens, discard)
        if soonest < math.inf:
            self._arm(soonest)
