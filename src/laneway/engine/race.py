"""A hedged attempt: the attempt runs in place, and its hedge is a task a timer starts.

When the decision says a hedge is due at some instant (``Pause(until,
HEDGE_DUE)`` after ``Send``), ``HedgeRace`` sets a timer for it and the
driver awaits the first attempt in place, as on a lane without a hedge: a
hedge that never fires costs one timer set and cancelled, no task and no
extra turn of the event loop. When the timer fires, a task asks the decision
(``hedge_due``: the budget, the attempt still in flight), picks another
source and sends the hedge. The first answer wins:

- the hedge answers while the first attempt runs: the task cancels the
  caller's await of the first attempt (closing its connection), as
  ``asyncio.timeout`` cancels its body, and ``took_over`` tells the driver
  that cancellation was the race's, not the caller's or the deadline's;
- the first attempt answers: ``lose`` cancels the hedge (or, answered too,
  discards its answer) and counts it lost;
- the first attempt fails: ``rest`` waits for the hedge, if one runs.

Each hedge ending is judged and settled in its task as it ends, so a failure
counts for the breaker at once. ``abort`` stops everything when the call
itself is cancelled. For a stream, the attempt returns at its first byte, so
the first first byte wins, and ``discard`` closes a losing stream that
opened too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from laneway.core.clock import Clock, Timer
from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.engine.actions import Done, PickHedge, SendHedge
from laneway.engine.admission import Admitted, SourceAdmission
from laneway.engine.decision import CallDecision

T = TypeVar("T")
Sender = Callable[[Admitted], Awaitable[T]]


class HedgeRace(Generic[T]):
    """One attempt's hedge: a timer until it is due, then a task that runs it."""

    __slots__ = (
        "_baseline",
        "_interrupted",
        "aborting",
        "admission",
        "call",
        "clock",
        "decision",
        "discard",
        "error",
        "first_running",
        "over",
        "send",
        "task",
        "timer",
        "tokens",
        "won",
    )

    def __init__(
        self,
        decision: CallDecision[T],
        admission: SourceAdmission,
        send: Sender[T],
        tokens: int | None,
        discard: Callable[[T], Awaitable[None]] | None,
        clock: Clock,
    ) -> None:
        call = asyncio.current_task()
        assert call is not None, "an attempt runs in a task"
        self.call, self._baseline, self._interrupted = call, call.cancelling(), False
        self.decision, self.admission, self.send, self.tokens = decision, admission, send, tokens
        self.discard, self.clock = discard, clock
        self.timer: Timer | None = None
        self.task: asyncio.Task[None] | None = None
        self.won: Done[T] | None = None
        self.error: BaseException | None = None
        self.first_running, self.over, self.aborting = True, False, False

    def arm(self, due: float) -> None:
        """Start the hedge at ``due`` (the call clock's time), unless the race ends first."""
        self.timer = self.clock.call_at(due, self._fire)

    def first_ended(self) -> None:
        """The attempt in place ended (answered, failed): the hedge may no longer cut it."""
        self.first_running = False

    def took_over(self) -> bool:
        """Whether the cancellation the first attempt met was the race's (the hedge won or
        broke), not the caller's or the deadline's, which must go on."""
        self.first_running = False
        if not self._interrupted:
            return False
        self._interrupted = False
        return self.call.uncancel() <= self._baseline

    async def lose(self) -> None:
        """The first attempt answered: the hedge, if sent, is cancelled (or discarded) and lost."""
        self.over = True
        self._disarm()
        task = self.task
        if task is None:
            return
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
        """The first attempt failed: the hedge's answer (a ``Done``), or ``None``."""
        self._disarm()
        if self.task is not None:
            await asyncio.wait({self.task})
        if self.error is not None:
            raise self.error
        won, self.won = self.won, None
        return won

    async def abort(self) -> None:
        """The call is cancelled or broken: stop the hedge and give back its admission."""
        self.aborting, self.first_running = True, False
        self._disarm()
        task = self.task
        if task is None:
            return
        task.cancel()
        await asyncio.wait({task})
        won, self.won = self.won, None
        if won is not None:
            await self.admission.release(won.admitted)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _fire(self) -> None:
        self.timer = None
        self.task = asyncio.ensure_future(self._hedge())

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
