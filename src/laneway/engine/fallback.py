"""Lane fallback: when a lane's call fails, or the lane cannot run, the lanes it names try in turn.

Each lane of the chain (``LanewayConfig.fallback_chain``) runs its own
policy (deadline, retries, sources) from the moment it starts, and the
caller's deadline bounds the whole chain. The answer (or the last error)
carries every attempt of the chain; attempts of earlier lanes name their
lane (``lane/source``).

A lane that is not ready (a key variable unset) is skipped: it leaves a
telemetry row of its own (error ``lane_not_ready``, one ``not_ready``
attempt per source naming why, no upstream request), and the answer lists
those attempts too. Only a chain with no ready lane is ``LaneNotReady``,
naming every lane and why.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from laneway.core.clock import Clock
from laneway.core.errors import (
    CallFailed,
    ContextLengthExceeded,
    LaneNotReady,
    RequestInvalid,
    UpstreamRejected,
)
from laneway.core.failures import REQUEST_REJECTION_STATUSES
from laneway.core.records import CallMeta
from laneway.core.types import Attempt
from laneway.engine.lane import Lane
from laneway.engine.recording import Recorder
from laneway.engine.settings import Routes
from laneway.policy.deadline import Deadline


class Answer(Protocol):
    """What a lane's call returns: its attempts and elapsed time can be extended."""

    attempts: tuple[Attempt, ...]
    elapsed: float


AnswerT = TypeVar("AnswerT", bound=Answer)
LaneCall = Callable[[Lane, float | None], Awaitable[AnswerT]]


def falls_back(failure: CallFailed) -> bool:
    """Whether another lane may answer where this one failed.

    Not when the upstream refused the request itself (400, 413, 422), unless for
    its length, which a lane of larger windows may take.
    """
    if isinstance(failure, ContextLengthExceeded):
        return True
    return not (
        isinstance(failure, UpstreamRejected) and failure.status in REQUEST_REJECTION_STATUSES
    )


def of_lane(name: str, attempts: tuple[Attempt, ...]) -> tuple[Attempt, ...]:
    """``attempts`` named as attempts of lane ``name`` (``name/source``)."""
    return tuple(dataclasses.replace(a, source=f"{name}/{a.source}") for a in attempts)


def not_ready_attempts(lane: Lane) -> tuple[Attempt, ...]:
    """One ``not_ready`` attempt per problem of the lane's sources: why it was skipped."""
    return tuple(
        Attempt(source.name, "not_ready", 0.0, message=problem)
        for source in lane.sources
        for problem in source.problems
    )


class Chain:
    """One call's walk down a lane's fallback chain, under the caller's one deadline.

    ``next_lane`` gives each lane to try in turn with the caller's seconds
    left (``None``: no caller deadline); ``failed`` and ``skipped`` note what
    a lane met; ``tried`` holds every earlier lane's attempts, named by lane.
    """

    __slots__ = (
        "_position",
        "caller",
        "caller_seconds",
        "clock",
        "failure",
        "lanes",
        "meta",
        "recorder",
        "started",
        "tried",
    )

    def __init__(
        self,
        lanes: list[Lane],
        clock: Clock,
        recorder: Recorder,
        meta: CallMeta | None,
        caller_seconds: float | None,
    ) -> None:
        for lane in lanes:
            if not lane.problems:
                break
        else:
            raise chain_not_ready(lanes)
        self.lanes = lanes
        self.clock = clock
        self.recorder = recorder
        self.meta = meta
        self.caller_seconds = caller_seconds
        self.started = clock.now()
        self.caller = Deadline.after(self.started, caller_seconds)
        self.tried: tuple[Attempt, ...] = ()
        self.failure: CallFailed | None = None
        self._position = 0

    @classmethod
    def of(
        cls,
        routes: Routes,
        lanes: Mapping[str, Lane],
        first: Lane,
        clock: Clock,
        recorder: Recorder,
        meta: CallMeta | None,
        caller_seconds: float | None,
    ) -> Chain:
        """The chain that starts at ``first``; ``LaneNotReady`` when none of its lanes can run."""
        return cls(chain_of(routes, lanes, first), clock, recorder, meta, caller_seconds)

    @property
    def first(self) -> Lane:
        """The lane the caller named."""
        return self.lanes[0]

    def next_lane(self) -> tuple[Lane, float | None] | None:
        """The next lane to try, with the caller's seconds left; ``None`` when none is left.

        A lane that is not ready is skipped and recorded; after a failure, so
        is one that would not have ``min_attempt`` of the caller's time.
        """
        while self._position < len(self.lanes):
            lane = self.lanes[self._position]
            self._position += 1
            if lane.problems:
                self.skipped(lane)
                continue
            left = self.caller.remaining(self.clock.now())
            if self.failure is not None and left < lane.config.min_attempt:
                continue
            return lane, None if math.isinf(left) else left
        return None

    def skipped(self, lane: Lane) -> None:
        """Record a lane skipped because it cannot run."""
        attempts = not_ready_attempts(lane)
        reason = LaneNotReady(lane.name, lane.problems)
        self.recorder.failed(lane, self.recorder.start(), self.meta, reason, attempts=attempts)
        self.tried += of_lane(lane.name, attempts)

    def failed(self, lane: Lane, failure: CallFailed) -> bool:
        """Note ``lane``'s failure; whether the next lane may take over."""
        self.tried += of_lane(lane.name, failure.attempts)
        self.failure = failure
        return falls_back(failure)

    def elapsed(self) -> float:
        """Seconds since the chain started."""
        return self.clock.now() - self.started

    def last_failure(self) -> CallFailed:
        """The last lane's failure, carrying every attempt of the chain."""
        assert self.failure is not None, "a lane ran and failed before the chain gave up"
        self.failure.attempts = self.tried
        self.failure.elapsed = self.elapsed()
        return self.failure


def chain_of(routes: Routes, lanes: Mapping[str, Lane], first: Lane) -> list[Lane]:
    """``first`` and the lanes its failures fall back to, in the order they are tried."""
    if not first.config.fallback_lanes:
        return [first]
    return [lanes[name] for name in routes.fallback_chain(first.name)]


def ready_alone(lane: Lane) -> Lane:
    """``lane``, which names no fallback lanes, once it can run (``LaneNotReady`` as its chain
    of one would raise it otherwise).

    Its call then needs no ``Chain``: a chain of one lane only added a deadline
    and two coroutines to every chat call.
    """
    if lane.problems:
        raise chain_not_ready([lane])
    return lane


def chain_not_ready(lanes: list[Lane]) -> LaneNotReady:
    """``LaneNotReady`` for the first lane, naming every lane of its chain and why."""
    first, rest = lanes[0], lanes[1:]
    reasons = list(first.problems)
    reasons += [f"fallback lane {lane.name!r}: {'; '.join(lane.problems)}" for lane in rest]
    return LaneNotReady(first.name, reasons)


async def through_chain(chain: Chain, call: LaneCall[AnswerT]) -> AnswerT:
    """Run ``call`` on each lane of ``chain`` in turn until one answers or none is left.

    ``call(lane, seconds)`` runs one lane's call under the caller's
    ``seconds`` left (``None``: no caller deadline).
    """
    if len(chain.lanes) == 1:
        return await call(chain.first, chain.caller_seconds)
    while (turn := chain.next_lane()) is not None:
        lane, left = turn
        try:
            answer = await call(lane, left)
        except RequestInvalid:
            if chain.failure is None:
                raise
            continue
        except CallFailed as exc:
            if not chain.failed(lane, exc):
                break
            continue
        answer.attempts = chain.tried + answer.attempts
        answer.elapsed = chain.elapsed()
        return answer
    raise chain.last_failure()
