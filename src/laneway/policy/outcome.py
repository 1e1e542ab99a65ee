"""How an attempt's outcome counts: for health, for the breaker, for pacing.

One classification keeps the three policies consistent. Rejections and
invalid results say nothing about a source's health (the same request would
fail anywhere), so they are ``NEUTRAL``: a lane that sends a bad request must
not trip its own breaker. So is a restarted stream whose answer differs from
the text already sent (``diverged``): a model may word an answer differently.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Sequence
from types import MappingProxyType

from laneway.core.errors import AttemptFailure
from laneway.core.failures import NEUTRAL, FailureKind
from laneway.core.outcomes import EMPTY_SUMMARY, LogSummary, Mark, SourceRecord


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
    if failure.kind in NEUTRAL:
        return Verdict.NEUTRAL
    if failure.kind == FailureKind.TIMEOUT:
        return Verdict.TIMED_OUT
    if failure.status == 429:
        return Verdict.THROTTLED
    return Verdict.FAILED


_SAMPLE_BY_CODE = MappingProxyType(
    {v.value: v.health_sample for v in Verdict if v.health_sample is not None}
)
_OPENING_CODES = frozenset(v.value for v in Verdict if v.opens_breaker)
_OK = Verdict.OK.value
_AT = operator.attrgetter("at")
REBUILD_EVERY = 1024
"""Derived summaries in a row before one is rebuilt from its marks (bounds float drift)."""


def summarize(record: SourceRecord, half_life: float) -> LogSummary:
    """The summary of the record's marks, made once per record and half-life.

    Every pick reads each source's log for health, breaker and last failure;
    the summary is kept in the record (``SourceRecord.summaries``), beside
    the marks it describes. A record that extends its ``prior`` by one later
    mark (a settle in this process) is summarised from the prior summary in
    constant time instead of from its 32 marks.
    """
    if not record.marks:
        return EMPTY_SUMMARY  # EMPTY_RECORD is shared: nothing is written into it
    summary = record.summaries.get(half_life)
    if summary is None:
        summary = _derived(record, half_life) or summary_of(record.marks, half_life)
        record.summaries[half_life] = summary
    return summary


def _derived(record: SourceRecord, half_life: float) -> LogSummary | None:
    """The summary from the prior log's, when ``record`` extends it by one later mark."""
    prior, marks = record.prior, record.marks
    if prior is None or len(marks) < 2:
        return None
    summary = prior.summaries.get(half_life)
    if summary is None:
        return None
    new = marks[-1]
    if new.at < summary.newest or summary.steps >= REBUILD_EVERY:
        return None
    kept, before = marks[:-1], prior.marks
    if kept == before:
        dropped = None
    elif summary.in_order and kept == before[1:]:
        dropped = before[0]
    else:
        return None
    return _next(summary, dropped, new, half_life)


def _next(summary: LogSummary, dropped: Mark | None, new: Mark, half_life: float) -> LogSummary:
    """``summary`` without ``dropped`` (its oldest mark) and with ``new`` (newer than all)."""
    weight, good = summary.weight, summary.good
    failures, last_failure = summary.failures, summary.last_failure
    oks, opening = summary.oks, summary.opening
    if dropped is not None:
        sample = _SAMPLE_BY_CODE.get(dropped.code)
        if sample is not None:
            w = math.exp2((dropped.at - summary.newest) / half_life)
            weight, good = max(weight - w, 0.0), max(good - w * sample, 0.0)
        if dropped.code == _OK:
            oks -= 1
        elif dropped.code in _OPENING_CODES:
            opening -= 1
            if oks == 0 and failures:
                failures = failures[1:]
            if opening == 0:
                last_failure = None
    scale = math.exp2((summary.newest - new.at) / half_life)
    weight, good = weight * scale, good * scale
    sample = _SAMPLE_BY_CODE.get(new.code)
    if sample is not None:
        weight, good = weight + 1.0, good + sample
    if new.code == _OK:
        failures, oks = (), oks + 1
    elif new.code in _OPENING_CODES:
        failures, last_failure, opening = (*failures, new.at), new.at, opening + 1
    steps = summary.steps + 1
    return LogSummary(
        new.at, weight, good, failures, last_failure, summary.in_order, oks, opening, steps
    )


def summary_of(marks: Sequence[Mark], half_life: float) -> LogSummary:
    """The summary of ``marks`` made from all of them (what every derived summary equals)."""
    if not marks:
        return EMPTY_SUMMARY
    ordered = sorted(marks, key=_AT)
    in_order = all(a is b for a, b in zip(ordered, marks, strict=True))
    newest = ordered[-1].at
    weight = good = 0.0
    failures: list[float] = []
    last_failure = None
    oks = opening = 0
    for mark in ordered:
        code = mark.code
        sample = _SAMPLE_BY_CODE.get(code)
        if sample is not None:
            w = math.exp2((mark.at - newest) / half_life)
            weight += w
            good += w * sample
        if code == _OK:
            failures.clear()
            oks += 1
        elif code in _OPENING_CODES:
            failures.append(mark.at)
            last_failure = mark.at
            opening += 1
    return LogSummary(newest, weight, good, tuple(failures), last_failure, in_order, oks, opening)
