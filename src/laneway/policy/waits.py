"""Admission decisions shared by the gates: admit now, probe, or wait."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

UNTIL_RELEASE = math.inf
"""A wait that only a release (a freed slot) can end."""
PUSHBACK = "pushback"
"""The reason of a wait for a source's Retry-After to end."""
BACKOFF = "backoff"
"""The reason of a call's wait before going back to a source that failed."""
RELEASABLE = frozenset({"quota", "probe", "concurrency"})
"""The reasons of waits that a release can end early (a settled reservation, a freed
probe lease or slot): the state store's ``QUOTA`` and ``PROBE``, the pacer's
``CONCURRENCY_FULL``. Every other wait (breaker, pushback, backoff) is a timer."""


@dataclass(frozen=True, slots=True)
class Admit:
    """The gate lets the attempt through."""


@dataclass(frozen=True, slots=True)
class Probe:
    """The breaker is half-open: one attempt may test whether the source is back."""


ADMIT = Admit()
PROBE = Probe()
"""The two field-less decisions, made once (a gate answers one on every pick)."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing can run yet: look again after ``seconds``, or sooner if a slot frees.

    ``seconds`` is ``math.inf`` when only a release can end the wait (a full
    concurrency limit has no timer). ``reason`` names the gate, for errors and
    counters; ``source`` the source waited for, when the wait is one source's.
    """

    seconds: float
    reason: str
    source: str | None = None


def soonest(waits: Iterable[Wait]) -> Wait | None:
    """The shortest of ``waits`` (``None`` when there are none)."""
    return min(waits, key=lambda wait: wait.seconds, default=None)


def capped(wait: Wait, seconds: float) -> Wait:
    """``wait`` shortened to at most ``seconds`` (a check that must run by then)."""
    if seconds >= wait.seconds:
        return wait
    return Wait(max(seconds, 0.0), wait.reason, wait.source)


def room(remaining: float, min_attempt: float) -> float:
    """How long a call may still wait: what is left of its deadline less one shortest attempt."""
    return remaining - min_attempt


def fits(wait: Wait, remaining: float, min_attempt: float) -> bool:
    """Whether a call with ``remaining`` seconds can make ``wait`` and still attempt after it.

    The one rule of every local gate (breaker, probe lease, quota, concurrency,
    Retry-After marks, backoff): no wait fits once that room is spent; a timer
    (breaker, pushback, backoff) that ends later than the room does not fit,
    so the call ends at once. A wait that a release can end early
    (``RELEASABLE``) fits while room is left, and is made for at most that room.
    """
    left = room(remaining, min_attempt)
    if left <= 0:
        return False
    return wait.reason in RELEASABLE or wait.seconds <= left
