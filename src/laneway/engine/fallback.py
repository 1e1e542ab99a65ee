"""Lane fallback: when a lane's call fails, the lanes it names try in turn.

Each lane of the chain (``LanewayConfig.fallback_chain``) runs its own
policy (deadline, retries, sources) from the moment it starts, and the
caller's deadline bounds the whole chain. The answer (or the last error)
carries every attempt of the chain; attempts of earlier lanes name their
lane (``lane/source``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from laneway.config.models import LanewayConfig
from laneway.core.clock import Clock
from laneway.core.errors import (
    CallFailed,
    ContextLengthExceeded,
    LaneNotReady,
    RequestInvalid,
    UpstreamRejected,
)
from laneway.core.types import Attempt
from laneway.engine.lane import Lane
from laneway.policy.deadline import Deadline

CALLERS_OWN = frozenset({400, 422})
"""Rejections of the request itself: another lane would refuse it too."""


class Answer(Protocol):
    """What a lane's call returns: its attempts and elapsed time can be extended."""

    attempts: tuple[Attempt, ...]
    elapsed: float


AnswerT = TypeVar("AnswerT", bound=Answer)
LaneCall = Callable[[Lane, float | None], Awaitable[AnswerT]]


def falls_back(failure: CallFailed) -> bool:
    """Whether another lane may answer where this one failed.

    Not when the upstream refused the request itself (400, 422), unless for
    its length, which a lane of larger windows may take.
    """
    if isinstance(failure, ContextLengthExceeded):
        return True
    return not (isinstance(failure, UpstreamRejected) and failure.status in CALLERS_OWN)


async def through_chain(
    config: LanewayConfig,
    lanes: Mapping[str, Lane],
    clock: Clock,
    first: Lane,
    caller_seconds: float | None,
    call: LaneCall[AnswerT],
) -> AnswerT:
    """Run ``call`` on ``first``, then on its fallback lanes while calls fail and time is left.

    ``call(lane, seconds)`` runs one lane's call under the caller's
    ``seconds`` left (``None``: no caller deadline).
    """
    chain = config.fallback_chain(first.name)
    if len(chain) == 1:
        return await call(first, caller_seconds)
    started = clock.now()
    caller = Deadline.after(started, caller_seconds)
    tried: tuple[Attempt, ...] = ()
    failure: CallFailed | None = None
    for name in chain:
        lane = lanes[name]
        left = caller.remaining(clock.now())
        if failure is not None and (lane.problems or left < lane.config.min_attempt):
            continue
        try:
            answer = await call(lane, None if math.isinf(left) else left)
        except (RequestInvalid, LaneNotReady):
            if failure is None:
                raise
            continue
        except CallFailed as exc:
            tried += tuple(
                dataclasses.replace(a, source=f"{name}/{a.source}") for a in exc.attempts
            )
            failure = exc
            if not falls_back(exc):
                break
            continue
        answer.attempts = tried + answer.attempts
        answer.elapsed = clock.now() - started
        return answer
    assert failure is not None, "the first lane either answered or failed"
    failure.attempts = tried
    failure.elapsed = clock.now() - started
    raise failure
