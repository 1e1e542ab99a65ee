"""How an attempt's outcome counts: for health, for the breaker, for pacing.

One classification keeps the three policies consistent. Rejections and
invalid results say nothing about a source's health (the same request would
fail anywhere), so they are ``NEUTRAL``: a lane that sends a bad request must
not trip its own breaker.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol

from laneway.core.errors import AttemptFailure

NEUTRAL_KINDS = frozenset({"rejected", "context_length", "dimension"})


class Verdict(enum.Enum):
    """What one attempt says about its source. Values are the stored codes."""

    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timeout"
    THROTTLED = "throttled"
    NEUTRAL = "neutral"

    @property
    def health_sample(self) -> float | None:
        """1 for a success, 0 for any failure, ``None`` when it does not count."""
        if self is Verdict.NEUTRAL:
            return None
        return 1.0 if self is Verdict.OK else 0.0

    @property
    def opens_breaker(self) -> bool:
        """Failures that suggest the source is down.

        A 429 does not count: a throttled source is alive, and pacing and
        pushback already slow the lane down; opening the breaker on top would
        idle it for a whole cooldown.
        """
        return self in (Verdict.FAILED, Verdict.TIMED_OUT)

    @property
    def overloads(self) -> bool:
        """Signals that too many attempts are in flight (the AIMD cut)."""
        return self in (Verdict.TIMED_OUT, Verdict.THROTTLED)

    @property
    def logged(self) -> bool:
        """Whether the outcome goes into the source's outcome log."""
        return self is not Verdict.NEUTRAL


def judge(failure: AttemptFailure | None) -> Verdict:
    """Classify an attempt: ``None`` is a success.

    A ``malformed`` answer counts as a failure: a source that returns bodies
    nobody can parse (an HTML error page with status 200) is unhealthy, unlike
    an embedding whose length differs from the lane's pin.
    """
    if failure is None:
        return Verdict.OK
    if failure.kind in NEUTRAL_KINDS:
        return Verdict.NEUTRAL
    if failure.kind == "timeout":
        return Verdict.TIMED_OUT
    if failure.status == 429:
        return Verdict.THROTTLED
    return Verdict.FAILED


class Mark(Protocol):
    """One logged outcome: when it happened and its ``Verdict`` code."""

    @property
    def at(self) -> float:
        """Monotonic seconds."""
        ...

    @property
    def code(self) -> str:
        """A ``Verdict`` value."""
        ...


def verdicts(marks: Sequence[Mark]) -> list[tuple[float, Verdict]]:
    """The marks as ``(at, verdict)``, oldest first; unknown codes are dropped."""
    known = {v.value: v for v in Verdict}
    return sorted(((m.at, known[m.code]) for m in marks if m.code in known), key=_time)


def _time(entry: tuple[float, Verdict]) -> float:
    return entry[0]
