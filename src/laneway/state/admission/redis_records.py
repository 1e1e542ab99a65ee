"""``KnownRecords``: the sources' outcome logs a ``RedisStore`` has already read.

Every admission and settlement answers with the records of its sources. A
log holds up to ``LOG_SIZE`` outcomes and changes by one per attempt, so
sending it whole each time made parsing it most of a Redis round trip's
cost. Redis counts the outcomes pushed to each log (the ``logged`` key); the
store says how far it knows each log and the script answers only the
outcomes since (the whole log when the gap is wider than it, or the log
started again). A record that did not change is the same object as before,
so its health summary is not computed again.

It also remembers when each record was last read, so an admission that needs
nothing else from Redis may use records read a moment ago (``RedisStore``'s
``records_fresh_for``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laneway.core.outcomes import Mark, SourceRecord
from laneway.state.admission.base import LOG_SIZE


@dataclass(frozen=True, slots=True)
class _Known:
    logged: int
    last_ok: str
    record: SourceRecord


_NOTHING = _Known(0, "", SourceRecord())


class KnownRecords:
    """The last record read per (scope, source), and how many outcomes it accounts for."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], _Known] = {}
        self._read_at: dict[tuple[str, str], float] = {}

    def logged(self, lane: str, source: str) -> int:
        """The outcome number this store knows ``source``'s log up to (0: nothing yet)."""
        return self._known.get((lane, source), _NOTHING).logged

    def read_since(
        self, lane: str, sources: Sequence[str], since: float
    ) -> dict[str, SourceRecord] | None:
        """The records of ``sources`` if each was read at ``since`` or later, else ``None``."""
        records = {}
        for name in sources:
            key = (lane, name)
            if self._read_at.get(key, -math.inf) < since:
                return None
            records[name] = self._known[key].record
        return records

    def update(
        self, lane: str, source: str, raw: list[Any], offset: float, asked_at: float
    ) -> SourceRecord:
        """Fold a script's answer (``record_since`` in ``admission.lua``) into the record.

        ``offset`` is wall minus monotonic time (marks come back in wall time);
        ``asked_at`` the monotonic time the script was called (the record is
        at least that recent).
        An answer older than what is known (two calls crossed) changes nothing;
        a whole log counted 0 (its keys expired or were lost) replaces it.
        """
        count, last_ok, lines, whole = raw
        count = int(count)
        key = (lane, source)
        known = self._known.setdefault(key, _NOTHING)
        self._read_at[key] = max(self._read_at.get(key, asked_at), asked_at)
        fresh = count - known.logged
        if whole:
            if 0 < count < known.logged:
                return known.record
            marks = _marks(lines, offset)
        elif fresh < 0 or fresh > len(lines) or (fresh == 0 and last_ok == known.last_ok):
            return known.record
        else:
            marks = (*known.record.marks, *_marks(lines[:fresh], offset))[-LOG_SIZE:]
        ok = float(last_ok) - offset if last_ok else None
        record = known.record.successor(marks, ok)
        self._known[key] = _Known(count, last_ok, record)
        return record


def _marks(lines: list[str], offset: float) -> tuple[Mark, ...]:
    """``"<wall time> <code>"`` lines, newest first, as marks oldest first."""
    marks = []
    for line in reversed(lines):
        at, _, code = line.partition(" ")
        marks.append(Mark(float(at) - offset, code))
    return tuple(marks)
