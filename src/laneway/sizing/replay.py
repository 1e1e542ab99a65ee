"""Replaying recorded calls under other settings, through the real call loop, in virtual time.

Each recorded call becomes a script: the attempt function the call loop
runs takes the source's next recorded attempt, sleeps its recorded time, and
answers or fails as it did. The call loop, admission, backoff and deadline
are the engine's own, so the replayed wall is what laneway would do, not
arithmetic. Where a replay goes past what was recorded (more retries than the
call made, or a source it never reached), the next attempt is drawn from that
source's recorded attempts (from the lane's, for a source never seen), with a
seeded generator so a replay is repeatable. Censored attempts (``timeout``,
``deadline``) never answer.

Calls recorded with their start times (telemetry's) replay on one timeline:
each starts when it started, beside the others in flight, on one lane whose
memory they share. So the recorded failures open breakers for the calls
after them, calls queue at the sources' ``rpm``/``tpm`` gates and AIMD
concurrency with the recorded arrival rate (each reserving its recorded
tokens), and every wait counts in the replayed wall, as in the real calls.
Calls without a start time (a script written by hand) replay each alone,
on a fresh lane memory.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laneway.app import build_lane, local_call_loop
from laneway.clocks import VirtualClock
from laneway.config.models import LaneConfig
from laneway.core.errors import AttemptFailure, CallFailed
from laneway.core.failures import REJECTION_STATUSES, FailureKind
from laneway.core.types import Usage
from laneway.engine.call import CallLoop
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
    """What a replayed attempt returns: the call's recorded tokens (unknown: the quota keeps
    its reservation)."""

    def __init__(self, tokens: int | None) -> None:
        self.usage = None if tokens is None else Usage(total_tokens=tokens, source="provider")


def replay(
    name: str, config: LaneConfig, calls: Sequence[RecordedCall], seed: int = 0
) -> list[Replayed]:
    """Replay ``calls`` on lane ``name`` as ``config`` would run them, in virtual time.

    On one shared timeline when every call has its start time, else each alone.
    """
    if not calls:
        return []
    clock = VirtualClock()
    lane = build_lane(name, _keyless(config), {})
    pools = _pools(calls)
    rng = random.Random(seed)
    if all(call.at is not None for call in calls):
        return clock.run(_timeline(lane, clock, calls, pools, rng))

    async def alone() -> list[Replayed]:
        replayed = []
        for call in calls:
            lane.memory = LaneMemory()
            loop = local_call_loop(clock, random.Random(0))
            replayed.append(await _one(lane, loop, clock, _Script(call, pools, rng), call))
        return replayed

    return clock.run(alone())


async def _timeline(
    lane: Lane,
    clock: VirtualClock,
    calls: Sequence[RecordedCall],
    pools: dict[str, list[RecordedAttempt]],
    rng: random.Random,
) -> list[Replayed]:
    """Every call started at its recorded offset from the first, all on one lane and loop."""
    loop = local_call_loop(clock, random.Random(0))
    origin = min(call.at or 0.0 for call in calls)
    began = clock.now()
    order = sorted(range(len(calls)), key=lambda i: calls[i].at or 0.0)
    running: dict[int, asyncio.Task[Replayed]] = {}
    for index in order:
        call = calls[index]
        start = began + (call.at or 0.0) - origin
        if start > clock.now():
            await clock.sleep(start - clock.now())
        one = _one(lane, loop, clock, _Script(call, pools, rng), call)
        running[index] = asyncio.ensure_future(one)
    await asyncio.gather(*running.values())
    return [running[index].result() for index in range(len(calls))]


async def _one(
    lane: Lane, loop: CallLoop, clock: VirtualClock, script: _Script, call: RecordedCall
) -> Replayed:
    first_byte = lane.config.first_byte_timeout if call.stream else None
    answer = _Answer(call.tokens)

    async def attempt(source: Source) -> _Answer:
        step = script.next(source.name)
        if first_byte is not None and (step.censored or step.elapsed > first_byte):
            await clock.sleep(first_byte)
            raise AttemptFailure(FailureKind.TIMEOUT, "no first token within first_byte_timeout")
        if step.censored:
            never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            await never
        await clock.sleep(step.elapsed)
        if step.ok:
            return answer
        raise _failure(step)

    start = clock.now()
    deadline = Deadline.after(start, lane.config.deadline)
    try:
        done = await loop.run(lane, deadline, attempt, request_tokens=call.tokens)
    except CallFailed as exc:
        return Replayed(False, clock.now() - start, len(exc.attempts))
    return Replayed(True, done.elapsed, len(done.attempts))


def _failure(step: RecordedAttempt) -> AttemptFailure:
    """The failure a recorded outcome stands for (a status code, or a kind such as ``connect``).

    An outcome that names no failure kind replays as ``malformed``: a failure
    that no ``retry_on`` retries (``cancelled`` and ``hedge_lost`` are censored,
    never failures: see ``samples.CENSORED``).
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
