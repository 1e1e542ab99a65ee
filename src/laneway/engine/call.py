"""The call loop: attempts, backoff and pushback under one enforced deadline.

The deadline is a cancel scope around the whole call (``asyncio.timeout_at``),
so an attempt, a backoff sleep or a pushback wait in flight when it passes is
cancelled, and the caller gets ``DeadlineExceeded`` with the attempts made.
Each attempt gets ``min(attempt_timeout, time left)``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from laneway.core.clock import Clock
from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    ContextLengthExceeded,
    DeadlineExceeded,
    DimensionMismatch,
    PushbackRefused,
    UpstreamFailed,
    UpstreamRejected,
)
from laneway.core.types import Attempt
from laneway.core.units import format_duration
from laneway.engine.admission import CallSources, SourceAdmission
from laneway.engine.lane import Lane, Source
from laneway.policy.deadline import Deadline
from laneway.policy.retry import GiveUp, Pushback, Retry

T = TypeVar("T")
AttemptFn = Callable[[Source], Awaitable[T]]


@dataclass(slots=True)
class CallState:
    """What one call has done so far; owned by the loop, read by the caller."""

    start: float
    attempts: list[Attempt] = field(default_factory=list)
    sources: CallSources = field(default_factory=CallSources)
    retries_used: int = 0
    pushbacks_used: int = 0
    last_failure: AttemptFailure | None = None
    in_flight: tuple[str, float] | None = None

    def cut_in_flight(self, now: float) -> None:
        """Record the attempt the deadline cancelled, if one was running."""
        if self.in_flight is not None:
            name, started = self.in_flight
            self.attempts.append(
                Attempt(name, "deadline", now - started, message="cut at deadline")
            )
            self.in_flight = None


@dataclass(frozen=True, slots=True)
class CallOutcome(Generic[T]):
    """A successful call: the result, the source that gave it, and the history."""

    result: T
    source: Source
    attempts: tuple[Attempt, ...]
    elapsed: float


class CallLoop:
    """Drives one call: picks sources, bounds attempts, performs policy decisions."""

    def __init__(self, clock: Clock, rng: random.Random | None = None) -> None:
        self.clock = clock
        self.rng = rng or random.Random()
        self.admission = SourceAdmission()

    async def run(self, lane: Lane, deadline: Deadline, attempt: AttemptFn[T]) -> CallOutcome[T]:
        """Run ``attempt`` under the lane's policy until success or a verdict."""
        state = CallState(start=self.clock.now())
        try:
            async with asyncio.timeout_at(self._loop_time(deadline)):
                return await self._attempts(lane, deadline, state, attempt)
        except TimeoutError:
            now = self.clock.now()
            state.cut_in_flight(now)
            elapsed = now - state.start
            raise DeadlineExceeded(
                f"lane {lane.name}: deadline of {format_duration(deadline.at - state.start)} "
                f"passed after {len(state.attempts)} attempt(s)",
                lane=lane.name,
                attempts=tuple(state.attempts),
                elapsed=elapsed,
                deadline=deadline.at - state.start,
            ) from None

    def _loop_time(self, deadline: Deadline) -> float | None:
        if deadline.at == float("inf"):
            return None
        return asyncio.get_running_loop().time() + deadline.remaining(self.clock.now())

    async def _attempts(
        self, lane: Lane, deadline: Deadline, state: CallState, attempt: AttemptFn[T]
    ) -> CallOutcome[T]:
        while True:
            source = self._next_source(lane, state)
            started = self.clock.now()
            state.in_flight = (source.name, started)
            try:
                result = await self._bounded(attempt, source, lane, deadline, started)
            except AttemptFailure as failure:
                state.in_flight = None
                elapsed = self.clock.now() - started
                state.sources.failed_at[source.name] = self.clock.now()
                await self._after_failure(lane, deadline, state, source, failure, elapsed)
                continue
            state.in_flight = None
            elapsed = self.clock.now() - started
            state.attempts.append(Attempt(source.name, "ok", elapsed, status=200))
            return CallOutcome(
                result, source, tuple(state.attempts), self.clock.now() - state.start
            )

    def _next_source(self, lane: Lane, state: CallState) -> Source:
        source = self.admission.pick(lane, state.sources)
        if source is None:
            raise self._verdict(lane, state, state.last_failure, "no source left to try")
        return source

    async def _bounded(
        self, attempt: AttemptFn[T], source: Source, lane: Lane, deadline: Deadline, now: float
    ) -> T:
        """One attempt, cut at its own timeout when that comes before the deadline."""
        bound = lane.config.per_attempt
        if bound >= deadline.remaining(now):
            return await attempt(source)
        try:
            async with asyncio.timeout(bound):
                return await attempt(source)
        except TimeoutError:
            raise AttemptFailure(
                "timeout", f"no answer within attempt_timeout {format_duration(bound)}"
            ) from None

    async def _after_failure(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        source: Source,
        failure: AttemptFailure,
        elapsed: float,
    ) -> None:
        """Record the failure, then sleep as the policy says or raise its verdict."""
        state.last_failure = failure
        record = Attempt(
            source.name, failure.label, elapsed, failure.status, message=failure.message
        )
        if failure.kind == "context_length":
            state.attempts.append(record)
            self.admission.exclude_smaller_windows(lane, state.sources, source)
            return
        decision = lane.policy.decide(
            failure,
            retries_used=state.retries_used,
            pushbacks_used=state.pushbacks_used,
            remaining=deadline.remaining(self.clock.now()),
            rng=self.rng,
        )
        if isinstance(decision, GiveUp):
            state.attempts.append(record)
            raise self._verdict(lane, state, failure, decision.reason, pushback=decision.pushback)
        if isinstance(decision, Pushback):
            state.pushbacks_used += 1
            wait = decision.wait
        else:
            assert isinstance(decision, Retry)
            state.retries_used += 1
            wait = decision.delay
        pushed = isinstance(decision, Pushback)
        state.attempts.append(
            Attempt(
                source.name, failure.label, elapsed, failure.status, pushed, wait, failure.message
            )
        )
        await asyncio.sleep(wait)

    def _verdict(
        self,
        lane: Lane,
        state: CallState,
        failure: AttemptFailure | None,
        reason: str,
        *,
        pushback: bool = False,
    ) -> CallFailed:
        """The typed error for a call that ends on ``failure``."""
        kw: dict[str, Any] = {
            "lane": lane.name,
            "attempts": tuple(state.attempts),
            "elapsed": self.clock.now() - state.start,
            "deadline": lane.config.deadline,
        }
        detail = failure.message if failure is not None else "no attempt was made"
        message = f"lane {lane.name}: {detail} ({reason})"
        kind = failure.kind if failure is not None else ""
        if pushback:
            return PushbackRefused(message, **kw)
        if kind == "context_length":
            return ContextLengthExceeded(message, body=failure.body if failure else None, **kw)
        if kind == "rejected":
            return UpstreamRejected(message, body=failure.body if failure else None, **kw)
        if kind == "dimension":
            return DimensionMismatch(message, **kw)
        return UpstreamFailed(message, **kw)
