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
