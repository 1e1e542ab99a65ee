"""``SourceAdmission``: the one place that picks the source for an attempt.

A pick, in order:

1. the stall verdict: a call that has lasted ``stall_after`` while nothing
   in the lane succeeded stops here;
2. each source's standing: health and breaker from the store's records of
   outcomes, pushback marks and AIMD concurrency from this process, and the
   call's own memory (a backoff or Retry-After it waits for on a source that
   failed, sources set aside after a timeout or a refused connection);
3. a plan (``laneway.policy.selection``): the sources to try, in order, with
   panic when every breaker of the lane is open;
4. one store round trip, which reserves quota (and claims a half-open probe)
   on the first planned source that fits.

The answer is ``Admitted``, a ``Wait`` that the call loop sleeps through
(``wait`` wakes it early when a slot or reservation is released), or
``NoSource``. Waiting spends no attempt. After the attempt, ``settle`` (or
``release``, when it was cancelled) gives back the slot, the reservation and
the probe, and logs the outcome where every replica sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from laneway.core.clock import Clock
from laneway.core.errors import AttemptFailure
from laneway.core.outcomes import EMPTY_RECORD
from laneway.core.units import format_duration
from laneway.core.values import value
from laneway.engine.lane import Lane, LaneMemory, Source
from laneway.policy import selection
from laneway.policy.outcome import Verdict, judge, summarize
from laneway.policy.pacer import Pacer
from laneway.policy.selection import Candidate, Plan, Try
from laneway.policy.waits import PUSHBACK, Wait, capped, soonest
from laneway.state.admission.base import Admission, Ask, SourceStore

logger = logging.getLogger("laneway.admission")


@dataclass(slots=True)
class CallSources:
    """One call's memory of its sources: when it began, failures per source, exclusions.

    ``revisit`` says from when (and why) the call may go back to a source
    that failed; ``set_aside`` names the sources that timed out or refused
    the connection, tried again only when no other source can run.
    Local to the call, never shared: one call's failures must not steer another's.
    """

    started: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    revisit: dict[str, tuple[float, str]] = field(default_factory=dict)
    set_aside: set[str] = field(default_factory=set)

    def revisit_after(self, source: str, at: float, reason: str) -> None:
        """Keep the call off ``source`` until ``at`` (a backoff or a Retry-After)."""
        self.revisit[source] = (at, reason)


@value
class Admitted:
    """A source admitted for one attempt, and what settling the attempt needs."""

    lane: Lane
    source: Source
    ask: Ask
    started: float
    panic: bool = False


@dataclass(frozen=True, slots=True)
class NoSource:
    """No source will run for this call: ``reason`` says why; ``stalled`` for the stall verdict."""

    reason: str
    stalled: bool = False


class SourceAdmission:
    """Picks a runnable source for each attempt, or says how long to wait, or why not.

    ``stats`` counts admissions, panics, waits by reason and stall verdicts.
    """

    def __init__(self, store: SourceStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.stats: Counter[str] = Counter()
        self._tickets = itertools.count()
        self._ticket_prefix = secrets.token_hex(6)

    async def pick(
        self, lane: Lane, call: CallSources, request_tokens: int | None = None
    ) -> Admitted | Wait | NoSource:
        """Admit a source for the next attempt, or say how long to wait, or why none will run."""
        now = self.clock.now()
        memory = lane.memory
        if lane.stall.after is not None and lane.stall.stalled(
            now, call.started, memory.last_progress(lane.source_keys)
        ):
            self.stats["stalled"] += 1
            after = format_duration(lane.stall.after or 0.0)
            return NoSource(f"nothing in the lane succeeded for stall_after {after}", True)
        sources = lane.runnable
        if call.excluded:
            sources = [s for s in sources if s.name not in call.excluded]
        if not sources:
            return NoSource("no source left to try")
        candidates = [self._candidate(lane, memory, s, call, now) for s in sources]
        plan = selection.plan(candidates, memory.turns, lane.health)
        ticket = f"{self._ticket_prefix}-{next(self._tickets)}"
        named = lane.named
        asks = [self._ask(lane, named[t.name], t, request_tokens, ticket) for t in plan.tries]
        admission = await self._reserve(lane, memory, asks)
        if admission.granted is not None:
            chosen = plan.tries[asks.index(admission.granted)]
            return self._admitted(lane, memory, named[chosen.name], admission, chosen, candidates)
        wait = soonest(_waits(plan, admission))
        assert wait is not None, "a source not tried has a wait; a refused one has a refusal"
        progress = memory.last_progress(lane.source_keys)
        return capped(wait, lane.stall.due(call.started, progress) - now)

    async def wait(self, lane: Lane, until: float, reason: str) -> None:
        """Sleep until ``until`` (``inf``: until woken) for ``reason``, waking early when
        something is released in the lane."""
        self.stats[f"wait:{reason}"] += 1
        memory = lane.memory
        released = asyncio.Event()
        memory.waiters[released] = None
        try:
            with contextlib.suppress(TimeoutError):
                async with self.clock.deadline(until):
                    await released.wait()
        finally:
            memory.waiters.pop(released, None)

    async def settle(
        self, admitted: Admitted, failure: AttemptFailure | None, tokens: int | None
    ) -> None:
        """End an attempt: adapt the pacer, settle the quota, log the outcome.

        The quota settles at ``tokens`` (``None`` keeps the reservation on a
        success). A failure without ``tokens`` settles at zero, since a failed
        request produced none; a stream cut mid-answer passes what it consumed.
        """
        verdict = judge(failure)
        memory = admitted.lane.memory
        pacer = memory.pacer(admitted.source)
        if pacer is not None:
            pacer.leave(verdict, admitted.started, self.clock.now())
        settled = 0 if tokens is None and verdict is not Verdict.OK else tokens
        code = verdict.value if verdict.logged else None
        await self._settle_ask(admitted, settled, code)

    async def abandon(self, admitted: Admitted, tokens: int | None) -> None:
        """End an attempt its caller gave up mid-answer (a stream closed early).

        The slot is freed and the quota settles at the ``tokens`` consumed, but
        no outcome is logged: the source did nothing right or wrong.
        """
        pacer = admitted.lane.memory.pacer(admitted.source)
        if pacer is not None:
            pacer.give_back()
        await self._settle_ask(admitted, tokens, None)

    async def _settle_ask(self, admitted: Admitted, tokens: int | None, code: str | None) -> None:
        memory = admitted.lane.memory
        try:
            record = await self.store.settle(admitted.lane.scope, admitted.ask, tokens, code)
            memory.records[admitted.source.key] = record
        finally:
            memory.notify()

    async def release(self, admitted: Admitted) -> None:
        """Undo an admission whose attempt was cancelled: slot, reservation and probe."""
        memory = admitted.lane.memory
        pacer = memory.pacer(admitted.source)
        if pacer is not None:
            pacer.give_back()
        try:
            await self.store.release(admitted.lane.scope, admitted.ask)
        finally:
            memory.notify()

    async def aclose(self) -> None:
        """Close the store's connections."""
        await self.store.aclose()

    def _candidate(
        self, lane: Lane, memory: LaneMemory, source: Source, call: CallSources, now: float
    ) -> Candidate:
        log = summarize(memory.records.get(source.key, EMPTY_RECORD), lane.health.half_life)
        pushed_back = memory.pushed_back_for(source, now) if memory.pushed_back else 0.0
        revisit = _revisit(call, source.name, pushed_back, now) if call.revisit else None
        honoured = revisit is None and pushed_back > 0 and _honoured(lane, pushed_back)
        blocked: Wait | None = None
        if honoured:
            blocked = Wait(pushed_back, PUSHBACK, source.name)
        elif source.pacing is not None:
            blocked = memory.full(source)
        return Candidate(
            source.name,
            lane.health.score(log, now),
            (source.breaker or lane.breaker).gate(log, now),
            source.config.priority,
            source.config.weight,
            blocked,
            call.failures.get(source.name, 0),
            log.last_failure,
            revisit,
            source.name in call.set_aside,
            revisit is None and not honoured and pushed_back > 0,
        )

    def _ask(
        self, lane: Lane, source: Source, planned: Try, request_tokens: int | None, ticket: str
    ) -> Ask:
        probe = lane.config.per_attempt if planned.probe else 0.0
        quota = source.quota
        if quota is None:
            return Ask(source.key, ticket, probe=probe)
        tokens = quota.reservation(request_tokens)
        window = quota.held_for
        return Ask(
            source.key, ticket, tokens, quota.rpm, quota.tpm, window, probe, source.quota_key
        )

    async def _reserve(self, lane: Lane, memory: LaneMemory, asks: list[Ask]) -> Admission:
        """One store round trip; concurrency slots are held across it so no pick overtakes."""
        if not asks:
            return Admission(None, (), {})
        held = self._held(lane, memory, asks) if lane.paced else []
        for pacer in held:
            pacer.take()
        granted: Pacer | None = None
        try:
            admission = await self.store.admit(lane.scope, lane.source_keys, asks)
            memory.records.update(admission.records)
            if admission.granted is not None:
                granted = memory.pacers.get(admission.granted.source)
        finally:
            for pacer in held:
                if pacer is not granted:
                    pacer.give_back()
        return admission

    def _held(self, lane: Lane, memory: LaneMemory, asks: list[Ask]) -> list[Pacer]:
        """The pacers of the asked sources, whose slots are held across the store round trip."""
        names = {ask.source for ask in asks}
        paced = (memory.pacer(s) for s in lane.sources if s.key in names)
        return [pacer for pacer in paced if pacer is not None]

    def _admitted(
        self,
        lane: Lane,
        memory: LaneMemory,
        source: Source,
        admission: Admission,
        chosen: Try,
        candidates: Sequence[Candidate],
    ) -> Admitted:
        assert admission.granted is not None
        self.stats["admitted"] += 1
        if chosen.panic:
            self.stats["panic"] += 1
            if not memory.panicking:
                logger.warning(
                    "lane %s: every source's breaker is open; trying %s anyway (panic)",
                    lane.name,
                    source.name,
                )
        memory.panicking = chosen.panic
        if len(candidates) > 1:
            memory.turns.took(source.name, selection.peers(source.name, candidates, lane.health))
        return Admitted(lane, source, admission.granted, self.clock.now(), chosen.panic)


def _revisit(call: CallSources, name: str, pushed_back: float, now: float) -> Wait | None:
    """The call's wait before going back to ``name``, at least the source's Retry-After."""
    revisit = call.revisit.get(name)
    if revisit is None:
        return None
    until, reason = revisit
    seconds = max(until - now, pushed_back)
    return Wait(seconds, reason, name) if seconds > 0 else None


def _honoured(lane: Lane, pushed_back: float) -> bool:
    """Whether calls wait out a source's Retry-After (pushback on, the wait within bounds).

    With pushback off, or a mark longer than ``max_pushback_wait``, the mark
    only steers calls to other sources: a lone source stays in rotation.
    """
    policy = lane.policy
    return policy.max_pushbacks > 0 and 0 < pushed_back <= policy.max_pushback_wait


def _waits(plan: Plan, admission: Admission) -> list[Wait]:
    return [*plan.waits, *(Wait(r.seconds, r.reason) for r in admission.refusals)]
