"""The race of a hedged attempt: the first attempt, and a second on another source if it is slow.

The driver performs ``laneway.policy.hedge.step``: wait for the attempts in
flight until the hedge is due, start the hedge (admitted like any attempt on
a source other than the first's; not admitted, not sent), or hold. The first
whole answer wins; the other attempt is cancelled at once, which closes its
connection. Each attempt that ends is handed to ``on_end`` as it ends, so a
failure is settled (and counts for the breaker) even when the call goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from laneway.core.clock import Clock
from laneway.core.errors import AttemptFailure
from laneway.engine.admission import Admitted, SourceAdmission
from laneway.engine.callstate import CallState
from laneway.engine.lane import Hedging, Lane
from laneway.policy.hedge import Hedge, WaitUntil, step

T = TypeVar("T")


@dataclass(slots=True)
class RaceEnd(Generic[T]):
    """One attempt of the race, ended: answered, failed, or cancelled (it lost)."""

    admitted: Admitted
    hedge: bool
    elapsed: float
    result: T | None = None
    failure: AttemptFailure | None = None
    answered: bool = False


@dataclass(slots=True)
class _Runner(Generic[T]):
    admitted: Admitted
    hedge: bool
    task: asyncio.Task[T]


class Race(Generic[T]):
    """Runs one attempt, and its hedge when due; ``run`` returns the winner or ``None``."""

    def __init__(
        self,
        clock: Clock,
        admission: SourceAdmission,
        lane: Lane,
        hedging: Hedging,
        state: CallState,
        request_tokens: int | None,
        attempt: Callable[[Admitted], Awaitable[T]],
        on_end: Callable[[RaceEnd[T]], Awaitable[None]],
    ) -> None:
        self.clock, self.admission, self.lane, self.hedging = clock, admission, lane, hedging
        self.state, self.tokens, self.attempt, self.on_end = state, request_tokens, attempt, on_end

    async def run(self, first: Admitted, remaining: float) -> RaceEnd[T] | None:
        """Race ``first`` (and its hedge); the winner, or ``None`` when every attempt failed."""
        runners = [self._start(first, hedge=False)]
        delay = self.hedging.limits.delay(self.hedging.answered.times)
        hedgeable = delay + self.lane.policy.min_attempt < remaining
        hedged = False
        try:
            while runners:
                now = self.clock.now()
                action = step(first.started, delay, now, hedged=hedged, hedgeable=hedgeable)
                if isinstance(action, Hedge):
                    hedged = True
                    second = await self._second(first)
                    if second is not None:
                        runners.append(self._start(second, hedge=True))
                    continue
                await self._first_of(runners, action.at if isinstance(action, WaitUntil) else None)
                for runner in [r for r in runners if r.task.done()]:
                    ended = self._ended(runner)  # raises an unexpected error: released below
                    runners.remove(runner)
                    if ended.answered:
                        await self._cancel(runners)
                        return ended
                    await self.on_end(ended)
            return None
        except BaseException:
            await self._abort(runners)
            raise

    def _start(self, admitted: Admitted, *, hedge: bool) -> _Runner[T]:
        running = (admitted.source.name, admitted.started)
        if hedge:
            self.state.hedge_in_flight = running
        else:
            self.state.in_flight = running
        return _Runner(admitted, hedge, asyncio.ensure_future(self.attempt(admitted)))

    async def _second(self, first: Admitted) -> Admitted | None:
        """The hedge's admission on another source, if the budget and admission allow it now."""
        budget = self.hedging.budget
        if not budget.take(self.clock.now()):
            return None
        sources = self.state.sources
        others = dataclasses.replace(
            sources,
            excluded={*sources.excluded, first.source.name},
            failures=dict(sources.failures),
            revisit=dict(sources.revisit),
            set_aside=set(sources.set_aside),
        )
        pick = await self.admission.pick(self.lane, others, self.tokens)
        if isinstance(pick, Admitted):
            return pick
        budget.refund()
        return None

    async def _first_of(self, runners: list[_Runner[T]], until: float | None) -> None:
        tasks = {runner.task for runner in runners}
        if until is None or math.isinf(until):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            return
        with contextlib.suppress(TimeoutError):
            async with self.clock.deadline(until):
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)

    def _ended(self, runner: _Runner[T]) -> RaceEnd[T]:
        self._landed(runner)
        elapsed = self.clock.now() - runner.admitted.started
        error = runner.task.exception()
        if error is None:
            return RaceEnd(
                runner.admitted, runner.hedge, elapsed, runner.task.result(), answered=True
            )
        if isinstance(error, AttemptFailure):
            return RaceEnd(runner.admitted, runner.hedge, elapsed, failure=error)
        raise error

    def _landed(self, runner: _Runner[T]) -> None:
        if runner.hedge:
            self.state.hedge_in_flight = None
        else:
            self.state.in_flight = None

    async def _cancel(self, losers: list[_Runner[T]]) -> None:
        """Cancel the attempts still running; each is handed over as cancelled (or as failed)."""
        for loser in losers:
            loser.task.cancel()
        if losers:
            await asyncio.wait({loser.task for loser in losers})
        for loser in losers:
            self._landed(loser)
            elapsed = self.clock.now() - loser.admitted.started
            failure = None
            if not loser.task.cancelled():
                error = loser.task.exception()
                failure = error if isinstance(error, AttemptFailure) else None
            await self.on_end(RaceEnd(loser.admitted, loser.hedge, elapsed, failure=failure))

    async def _abort(self, runners: list[_Runner[T]]) -> None:
        """The call itself was cancelled (its deadline, its caller): stop and release all."""
        for runner in runners:
            runner.task.cancel()
        if runners:
            await asyncio.wait({runner.task for runner in runners})
        for runner in runners:
            await self.admission.release(runner.admitted)
