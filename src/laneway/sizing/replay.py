"""Replaying recorded calls under other settings, through the real call loop, in virtual time.

Each recorded call becomes a script: the attempt function the call loop
runs takes the source's next recorded attempt, sleeps its recorded time, and
answers or fails as it did. The call loop, admission, backoff and deadline
are the engine's own, so the replayed wall is what laneway would do, not
arithmetic. Where a replay goes past what was recorded (more retries than the
call made, or a source it never reached), the next attempt is drawn from that
source's recorded attempts (from the lane's, for a source never seen), with a
seeded generator so a replay is repeatable. Censored attempts (``timeout``,
``deadline``) never answer. Each call replays alone, on a fresh lane memory:
one call's failures do not open a breaker for the next.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass

from laneway.app import build_lane, local_call_loop
from laneway.clocks import VirtualClock
from laneway.config.models import LaneConfig
from laneway.core.errors import AttemptFailure, CallFailed
from laneway.core.failures import REJECTION_STATUSES, FailureKind
from laneway.engine.lane import Lane, LaneMemory, Source
from laneway.policy.deadline import Deadline
from laneway.sizing.samples import RecordedAttempt, RecordedCall


@dataclass(frozen=True, slots=True)
class Replayed:
    """One replayed call: whether it was answered, its wall and its upstream requests."""

    answered: bool
    wall: float
    requests: int


class _Script:
    """The attempts one replayed call meets, per source, then draws from the pools."""

    def __init__(
        self,
        call: RecordedCall,
        pools: dict[str, list[RecordedAttempt]],
        rng: random.Random,
    ) -> None:
        self._pending: dict[str, list[RecordedAttempt]] = {}
        for attempt in call.attempts:
            self._pending.setdefault(attempt.source, []).append(attempt)
        self._pools = pools
        self._rng = rng

    def next(self, source: str) -> RecordedAttempt:
        pending = self._pending.get(source)
        if pending:
            return pending.pop(0)
        pool = self._pools.get(source) or self._pools[""]
        return self._rng.choice(pool)


class _Answer:
    """What a replayed attempt returns: no usage, so quota keeps its reservation."""

    usage = None


def replay(
    name: str, config: LaneConfig, calls: Sequence[RecordedCall], seed: int = 0
) -> list[Replayed]:
    """Replay ``calls`` on lane ``name`` as ``config`` would run them, in virtual time."""
    if not calls:
        return []
    clock = VirtualClock()
    lane = build_lane(name, _keyless(config), {})
    pools = _pools(calls)
    rng = random.Random(seed)

    async def all_calls() -> list[Replayed]:
        return [await _one(lane, clock, _Script(call, pools, rng), call.stream) for call in calls]

    return clock.run(all_calls())


async def _one(lane: Lane, clock: VirtualClock, script: _Script, stream: bool) -> Replayed:
    lane.memory = LaneMemory()
    loop = local_call_loop(clock, random.Random(0))
    first_byte = lane.config.first_byte_timeout if stream else None

    async def attempt(source: Source) -> _Answer:
        step = script.next(source.name)
        if first_byte is not None and (step.censored or step.elapsed > first_byte):
            await clock.sleep(first_byte)
            raise AttemptFailure(FailureKind.TIMEOUT, "no first token within first_byte_timeout")
        if step.censored:
            await asyncio.get_running_loop().create_future()
        await clock.sleep(step.elapsed)
        if step.ok:
            return _Answer()
        raise _failure(step)

    start = clock.now()
    deadline = Deadline.after(start, lane.config.deadline)
    try:
        done = await loop.run(lane, deadline, attempt)
    except CallFailed as exc:
        return Replayed(False, clock.now() - start, len(exc.attempts))
    return Replayed(True, done.elapsed, len(done.attempts))


def _failure(step: RecordedAttempt) -> AttemptFailure:
    """The failure a recorded outcome stands for (a status code, or a kind such as ``connect``).

    An outcome that names no failure kind (``cancelled``: the caller closed a
    stream) replays as ``malformed``: a failure that no ``retry_on`` retries.
    """
    if step.outcome.isdigit():
        status = int(step.outcome)
        kind = FailureKind.REJECTED if status in REJECTION_STATUSES else FailureKind.STATUS
        return AttemptFailure(kind, f"recorded {status}", status=status)
    try:
        kind = FailureKind(step.outcome)
    except ValueError:
        kind = FailureKind.MALFORMED
    return AttemptFailure(kind, f"recorded {step.outcome}", status=step.status)


def _pools(calls: Sequence[RecordedCall]) -> dict[str, list[RecordedAttempt]]:
    """Each source's recorded attempts, and under ``""`` the whole lane's."""
    pools: dict[str, list[RecordedAttempt]] = {"": []}
    for call in calls:
        for attempt in call.attempts:
            pools.setdefault(attempt.source, []).append(attempt)
            pools[""].append(attempt)
    return pools


def _keyless(config: LaneConfig) -> LaneConfig:
    """The lane with its sources' keys dropped: a replay sends nothing upstream."""
    sources = [s.model_copy(update={"api_key": None}) for s in config.sources]
    return config.model_copy(update={"sources": sources})
