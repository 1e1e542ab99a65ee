"""A lane's recorded calls, as attempt scripts, and the distributions they show.

Telemetry stores one row per call with its attempts in order. An embed call
runs one call loop per batch, so its attempts are split into one script per
batch (each ends at an ``ok``). Outcomes that say only "no answer by then"
(``timeout``, ``deadline``) are censored: how long the answer would have taken
is unknown, and a replay treats it as never coming.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from laneway.core.failures import FailureKind
from laneway.core.types import ANSWERED, UNJUDGED
from laneway.telemetry import CallSample

CENSORED = frozenset({FailureKind.TIMEOUT, FailureKind.DEADLINE, *UNJUDGED})
"""Outcomes that end an attempt without telling how long its answer would have taken: a
timeout, the deadline, and a hedge race's loser, cancelled when the other attempt answered."""


@dataclass(frozen=True, slots=True)
class RecordedAttempt:
    """One attempt as telemetry saw it."""

    source: str
    outcome: str
    elapsed: float
    status: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the attempt answered (``ok``, or a hedge that won its race)."""
        return self.outcome in ANSWERED

    @property
    def censored(self) -> bool:
        """Whether the attempt ended without saying when its answer would have come."""
        return self.outcome in CENSORED


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One call loop's attempts (a whole chat or OCR call, or one embed batch).

    ``at`` is when the call began (Unix seconds; ``None`` when not recorded)
    and ``tokens`` what it used (``None``: unknown): a replay starts it then
    and reserves that much of a ``tpm`` quota.
    """

    attempts: tuple[RecordedAttempt, ...]
    stream: bool = False
    at: float | None = None
    tokens: int | None = None

    @property
    def answered(self) -> bool:
        """Whether the recorded call ended with an answer."""
        return bool(self.attempts) and self.attempts[-1].ok

    @property
    def rescued(self) -> bool:
        """Whether a failed first attempt was followed by an answer."""
        return self.answered and len(self.attempts) > 1


@dataclass(frozen=True, slots=True)
class Distribution:
    """Percentiles of a set of durations, in seconds (nearest rank)."""

    count: int
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution | None:
        """The distribution of ``values``, or ``None`` when there are none."""
        ordered = sorted(values)
        if not ordered:
            return None
        return cls(
            len(ordered),
            percentile(ordered, 50),
            percentile(ordered, 90),
            percentile(ordered, 99),
            ordered[-1],
        )


@dataclass(frozen=True, slots=True)
class SourceProfile:
    """What one source's attempts looked like: latencies of answers and the failure mix."""

    source: str
    attempts: int
    latency: Distribution | None
    first_token: Distribution | None
    failures: dict[str, int]


def percentile(ordered: Sequence[float], pct: float) -> float:
    """The nearest-rank ``pct`` percentile of already sorted ``ordered`` (non-empty)."""
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def recorded_calls(samples: Iterable[CallSample]) -> list[RecordedCall]:
    """Every call loop run in ``samples`` as a script of attempts."""
    calls: list[RecordedCall] = []
    for sample in samples:
        attempts = [_attempt(a) for a in sample.attempts]
        stream, at = sample.stream, sample.time
        if sample.kind == "embed":
            batches = _batches(attempts)
            tokens = None if sample.tokens is None else sample.tokens // max(len(batches), 1)
            calls.extend(RecordedCall(batch, stream, at, tokens) for batch in batches)
        elif attempts:
            calls.append(RecordedCall(tuple(attempts), stream, at, sample.tokens))
    return calls


def profiles(calls: Iterable[RecordedCall]) -> list[SourceProfile]:
    """Per source, in order of first appearance: latency of answers and failures by outcome."""
    answers: dict[str, list[float]] = {}
    first_tokens: dict[str, list[float]] = {}
    failures: dict[str, Counter[str]] = {}
    counts: Counter[str] = Counter()
    for call in calls:
        for attempt in call.attempts:
            counts[attempt.source] += 1
            answers.setdefault(attempt.source, [])
            first_tokens.setdefault(attempt.source, [])
            failures.setdefault(attempt.source, Counter())
            if not attempt.ok:
                failures[attempt.source][attempt.outcome] += 1
            elif call.stream:
                first_tokens[attempt.source].append(attempt.elapsed)
            else:
                answers[attempt.source].append(attempt.elapsed)
    return [
        SourceProfile(
            name,
            counts[name],
            Distribution.of(answers[name]),
            Distribution.of(first_tokens[name]),
            dict(failures[name].most_common()),
        )
        for name in counts
    ]


def answer_times(calls: Iterable[RecordedCall], *, stream: bool) -> list[float]:
    """Every answered attempt's duration (time to first token for streams), sorted."""
    return sorted(a.elapsed for c in calls if c.stream == stream for a in c.attempts if a.ok)


def _attempt(raw: dict[str, object]) -> RecordedAttempt:
    status = raw.get("status")
    elapsed_ms = raw.get("elapsed_ms", 0.0)
    return RecordedAttempt(
        str(raw.get("source", "?")),
        str(raw.get("outcome", "?")),
        float(elapsed_ms) / 1000 if isinstance(elapsed_ms, int | float) else 0.0,
        status if isinstance(status, int) else None,
    )


def _batches(attempts: list[RecordedAttempt]) -> list[tuple[RecordedAttempt, ...]]:
    batches: list[tuple[RecordedAttempt, ...]] = []
    current: list[RecordedAttempt] = []
    for attempt in attempts:
        current.append(attempt)
        if attempt.ok:
            batches.append(tuple(current))
            current = []
    if current:
        batches.append(tuple(current))
    return batches
