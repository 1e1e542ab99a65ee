"""A source's outcome log as a store keeps it, and the summary the policies read of it.

A store hands admission a ``SourceRecord`` per source: the recent ``Mark``s
and the last success. Every pick reads each source's log for health, breaker
and last failure, so the record also holds its ``LogSummary`` per health
half-life, made once (``laneway.policy.outcome.summarize``). A record that a
store made from the previous one plus a new mark (a settle in this process)
carries that predecessor's marks and summaries as ``prior``, so its summary
is derived from the previous one in constant time instead of from its 32
marks. The summary lives with the marks it summarises: no memo outside them.
"""

from __future__ import annotations

from dataclasses import field

from laneway.core.values import value


@value
class Mark:
    """One logged attempt outcome: when (monotonic seconds), and its verdict code."""

    at: float
    code: str


@value
class LogSummary:
    """Everything the policies read from one outcome log, in a single pass.

    Health weights are taken relative to ``newest`` (the latest mark), so the
    decayed sums are computed once per log and scaled by one factor at ``now``.
    ``in_order`` (marks logged oldest first), ``oks``, ``opening`` and
    ``steps`` let the summary of the next log (one mark appended, maybe the
    oldest dropped) be derived from this one.
    """

    newest: float
    weight: float
    good: float
    failures: tuple[float, ...]
    last_failure: float | None
    in_order: bool = True
    oks: int = 0
    opening: int = 0
    steps: int = 0


EMPTY_SUMMARY = LogSummary(0.0, 0.0, 0.0, (), None)


@value
class PriorLog:
    """The log a record replaced: its marks and the summaries already made of them."""

    marks: tuple[Mark, ...]
    summaries: dict[float, LogSummary]


@value
class SourceRecord:
    """What a store remembers of a source's outcomes: recent marks, and the last success.

    ``summaries`` maps a health half-life to the summary of ``marks``; it is
    filled on first read and never describes other marks. ``prior`` is the
    record this one succeeded (``successor``), whose summaries seed this one's.
    Neither takes part in equality.
    """

    marks: tuple[Mark, ...] = ()
    last_ok: float | None = None
    prior: PriorLog | None = field(default=None, compare=False, repr=False)
    summaries: dict[float, LogSummary] = field(default_factory=dict, compare=False, repr=False)

    def successor(self, marks: tuple[Mark, ...], last_ok: float | None) -> SourceRecord:
        """The record after this one, linked to it so its summary can be derived.

        Only the marks and summaries are linked, not the record itself, so
        a long-running store holds one prior log per source, never a chain.
        """
        return SourceRecord(marks, last_ok, PriorLog(self.marks, self.summaries))


EMPTY_RECORD = SourceRecord()
