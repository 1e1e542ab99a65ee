"""The call loop: admission, attempts, backoff and pushback under one enforced deadline.

The deadline is a cancel scope around the whole call (``asyncio.timeout_at``),
so an attempt, a backoff sleep or an admission wait in flight when it passes
is cancelled, and the caller gets ``DeadlineExceeded`` with the attempts made.
Each attempt gets ``min(attempt_timeout, time left)``.

``SourceAdmission`` picks every attempt's source or says how long to wait;
waiting (for quota, a concurrency slot, a pushed-back source) spends no
attempt. Every admitted attempt is settled (or released, when cancelled), so
no reservation, slot or probe outlives its attempt. A stream's attempt is the
exception: it lasts until the stream ends, so the loop hands it to the stream
(``hold=True``), which settles it with the stream's real usage.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from laneway.core.clock import Clock
from laneway.core.errors import AttemptFailure, CallFailed, Inexpressible
from laneway.core.types import Attempt, Usage
from laneway.core.units import format_duration
from laneway.engine.admission import Admitted, CallSources, NoSource, SourceAdmission
from laneway.engine.lane import Lane, Source
from laneway.engine.verdicts import call_failed, deadline_exceeded, stalled
from laneway.policy.deadline import Deadline
from laneway.policy.quota import used_tokens
from laneway.policy.retry import PUSHBACK_STATUSES, Decision, GiveUp, Pushback, Retry
from laneway.state.base import SourceStore
from laneway.state.memory import MemoryStore

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
    waiting: str | None = None
    queue_wait: float = 0.0

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
    """A successful call: the result, the source that gave it, and the history.

    ``queue_wait`` is the time spent waiting for admission (quota, concurrency,
    pushback), not counting backoff sleeps. ``held`` is the successful
    attempt's admission when the caller asked to finish that attempt itself
    (``hold=True``): it is then neither settled nor in ``attempts``.
    """

    result: T
    source: Source
    attempts: tuple[Attempt, ...]
    elapsed: float
    queue_wait: float = 0.0
    held: Admitted | None = None


class CallLoop:
    """Drives one call: picks sources, bounds attempts, performs policy decisions."""

    def __init__(
        self, clock: Clock, rng: random.Random | None = None, store: SourceStore | None = None
    ) -> None:
        self.clock = clock
        self.rng = rng or random.Random()
        self.admission = SourceAdmission(store or MemoryStore(clock), clock)

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

        ``request_tokens`` (see ``laneway.policy.quota.estimate_tokens``) sizes
        the quota reservation on sources with a ``tpm``. With ``hold`` the
        successful attempt stays open: its slot and reservation are the
        caller's to settle (``CallOutcome.held``), and so is its record.
        """
        start = self.clock.now()
        state = CallState(start=start, sources=CallSources(started=start))
        try:
            async with asyncio.timeout_at(self._loop_time(deadline)):
                return await self._attempts(lane, deadline, state, attempt, request_tokens, hold)
        except TimeoutError:
            now = self.clock.now()
            state.cut_in_flight(now)
            attempts, budget = tuple(state.attempts), deadline.at - state.start
            raise deadline_exceeded(
                lane, attempts, now - state.start, budget, state.waiting
            ) from None

    def _loop_time(self, deadline: Deadline) -> float | None:
        if deadline.at == float("inf"):
            return None
        return asyncio.get_running_loop().time() + deadline.remaining(self.clock.now())

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
            state.in_flight = (source.name, started)
            try:
                result = await self._bounded(attempt, source, lane, deadline, started)
            except Inexpressible as refusal:
                state.in_flight = None
                await self.admission.release(admitted)
                _skip(state, source, refusal)
                continue
            except AttemptFailure as failure:
                state.in_flight = None
                elapsed = self.clock.now() - started
                failures = state.sources.failures
                failures[source.name] = failures.get(source.name, 0) + 1
                await self.admission.settle(admitted, failure, None)
                await self._after_failure(lane, deadline, state, source, failure, elapsed)
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
            await self.admission.settle(admitted, None, _tokens_used(result))
            state.attempts.append(Attempt(source.name, "ok", elapsed, status=200))
            total = self.clock.now() - state.start
            return CallOutcome(result, source, tuple(state.attempts), total, state.queue_wait)

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
                raise self._no_source(lane, state, decision)
            state.waiting = decision.reason
            began = self.clock.now()
            await self.admission.wait(lane, decision)
            state.queue_wait += self.clock.now() - began

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
        decision = self._decide(lane, deadline, state, source, failure)
        if isinstance(decision, GiveUp):
            state.attempts.append(record)
            raise self._verdict(lane, state, failure, decision.reason, pushback=decision.pushback)
        if isinstance(decision, Pushback):
            state.pushbacks_used += 1
            moved_on = self.admission.has_alternative(lane, state.sources, source)
            wait = 0.0 if moved_on else decision.wait
        else:
            state.retries_used += 1
            wait = decision.delay
        pushed = isinstance(decision, Pushback)
        state.attempts.append(dataclasses.replace(record, pushback=pushed, waited=wait))
        if isinstance(decision, Retry):
            await asyncio.sleep(wait)

    def _decide(
        self,
        lane: Lane,
        deadline: Deadline,
        state: CallState,
        source: Source,
        failure: AttemptFailure,
    ) -> Decision:
        """The retry policy's decision, with pushback applied to the source alone.

        A Retry-After marks only the source that sent it, so admission moves
        the call to another source, or waits for this one when it is the only
        one. A pushback too long to honour ends the call only when no other
        source can take it.
        """
        if failure.retry_after is not None and failure.status in PUSHBACK_STATUSES:
            self.admission.push_back(lane, source, failure.retry_after)
        decision = lane.policy.decide(
            failure,
            retries_used=state.retries_used,
            pushbacks_used=state.pushbacks_used,
            remaining=deadline.remaining(self.clock.now()),
            rng=self.rng,
        )
        refused = isinstance(decision, GiveUp) and decision.pushback
        if refused and self.admission.has_alternative(lane, state.sources, source):
            return Pushback(failure.retry_after or 0.0)
        return decision

    def _no_source(self, lane: Lane, state: CallState, verdict: NoSource) -> CallFailed:
        if verdict.stalled:
            elapsed = self.clock.now() - state.start
            attempts = tuple(state.attempts)
            return stalled(lane, attempts, elapsed, verdict.reason, state.waiting)
        return self._verdict(lane, state, state.last_failure, verdict.reason)

    def _verdict(
        self,
        lane: Lane,
        state: CallState,
        failure: AttemptFailure | None,
        reason: str,
        *,
        pushback: bool = False,
    ) -> CallFailed:
        elapsed = self.clock.now() - state.start
        attempts = tuple(state.attempts)
        return call_failed(lane, attempts, elapsed, failure, reason, pushback=pushback)


def _skip(state: CallState, source: Source, refusal: Inexpressible) -> None:
    """Leave out a source that cannot carry the request: no retry spent, nothing sent.

    The source is excluded for this call only and its health is untouched
    (admission is released, not settled); the skip is listed in ``attempts``.
    """
    state.sources.excluded.add(source.name)
    state.attempts.append(Attempt(source.name, "unsupported", 0.0, message=refusal.message))


def _tokens_used(result: object) -> int | None:
    """The tokens an attempt's result reports (``None``: keep the reservation)."""
    usage = getattr(result, "usage", None)
    return used_tokens(usage) if isinstance(usage, Usage) else None
