"""The typed error a call ends with, built from what the call did.

One place maps an ending (the last failure, a stall, the deadline) to the
error tree of ``laneway.core.errors``, so every path of the call loop names
its errors alike.
"""

from __future__ import annotations

from typing import Any

from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    ContextLengthExceeded,
    DeadlineExceeded,
    DimensionMismatch,
    PushbackRefused,
    Stalled,
    UpstreamFailed,
    UpstreamRejected,
)
from laneway.core.types import Attempt
from laneway.core.units import format_duration
from laneway.engine.lane import Lane


def call_failed(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    failure: AttemptFailure | None,
    reason: str,
    *,
    pushback: bool = False,
) -> CallFailed:
    """The error for a call that ends on ``failure`` (the last attempt's) for ``reason``."""
    kw = _facts(lane, attempts, elapsed)
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


def stalled(
    lane: Lane, attempts: tuple[Attempt, ...], elapsed: float, reason: str, waiting: str | None
) -> Stalled:
    """The stall verdict: the lane made no progress while the call waited."""
    message = f"lane {lane.name}: {reason}{_waiting(waiting)}"
    return Stalled(message, **_facts(lane, attempts, elapsed))


def deadline_exceeded(
    lane: Lane,
    attempts: tuple[Attempt, ...],
    elapsed: float,
    budget: float,
    waiting: str | None,
) -> DeadlineExceeded:
    """The deadline passed; ``waiting`` names what the call was waiting for, if anything."""
    message = (
        f"lane {lane.name}: deadline of {format_duration(budget)} passed after "
        f"{len(attempts)} attempt(s){_waiting(waiting)}"
    )
    return DeadlineExceeded(
        message, lane=lane.name, attempts=attempts, elapsed=elapsed, deadline=budget
    )


def _facts(lane: Lane, attempts: tuple[Attempt, ...], elapsed: float) -> dict[str, Any]:
    return {
        "lane": lane.name,
        "attempts": attempts,
        "elapsed": elapsed,
        "deadline": lane.config.deadline,
    }


def _waiting(waiting: str | None) -> str:
    return f" while waiting for {waiting}" if waiting else ""
