"""``MemoryStore``: the state port inside one process (the default, and the fallback).

Every method runs without awaiting anything, so each is atomic under asyncio.
Times are the clock's monotonic seconds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from laneway.core.clock import TimeSource
from laneway.core.outcomes import EMPTY_RECORD, Mark, SourceRecord
from laneway.state.admission.base import (
    LOG_SIZE,
    PROBE,
    QUOTA,
    Admission,
    Ask,
    Peek,
    QuotaUse,
    Refusal,
    SourceDump,
)
from laneway.state.window import Entry, SlidingWindow


@dataclass(slots=True)
class _SourceState:
    window: SlidingWindow = field(default_factory=SlidingWindow)
    window_seconds: float = 60.0
    marks: deque[Mark] = field(default_factory=lambda: deque(maxlen=LOG_SIZE))
    last_ok: float | None = None
    probe: tuple[str, float] | None = None
    cached: SourceRecord = EMPTY_RECORD

    def record(self) -> SourceRecord:
        """The current record; the same object until the log changes (it holds its summaries).

        A changed log makes the record's ``successor``, so the new summary is
        derived from the previous one.
        """
        if (
            len(self.cached.marks) != len(self.marks)
            or self.cached.last_ok != self.last_ok
            or (self.marks and self.cached.marks[-1] is not self.marks[-1])
        ):
            self.cached = self.cached.successor(tuple(self.marks), self.last_ok)
        return self.cached

    def probe_wait(self, now: float) -> float:
        if self.probe is None:
            return 0.0
        return max(self.probe[1] - now, 0.0)

    def free_probe(self, ticket: str) -> None:
        if self.probe is not None and self.probe[0] == ticket:
            self.probe = None


class MemoryStore:
    """Quota windows, outcome logs and probe leases in this process's memory."""

    def __init__(self, clock: TimeSource) -> None:
        self.clock = clock
        self._sources: dict[tuple[str, str], _SourceState] = {}

    async def admit(self, lane: str, sources: Sequence[str], asks: Sequence[Ask]) -> Admission:
        """Grant the first ask that fits; see ``SourceStore.admit``."""
        now = self.clock.now()
        refusals: list[Refusal] = []
        granted = None
        for ask in asks:
            refusal = self._take(lane, ask, now)
            if refusal is None:
                granted = ask
                break
            refusals.append(refusal)
        records = {name: self._state(lane, name).record() for name in sources}
        return Admission(granted, tuple(refusals), records)

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        """See ``SourceStore.settle``."""
        state = self._state(lane, ask.source)
        if tokens is not None:
            self._state(lane, ask.quota_source).window.settle(ask.ticket, tokens)
        state.free_probe(ask.ticket)
        if code is not None:
            now = self.clock.now()
            state.marks.append(Mark(now, code))
            if code == "ok":
                state.last_ok = now
        return state.record()

    async def release(self, lane: str, ask: Ask) -> None:
        """See ``SourceStore.release``."""
        self._state(lane, ask.quota_source).window.release(ask.ticket)
        self._state(lane, ask.source).free_probe(ask.ticket)

    async def peek(
        self, lane: str, sources: Sequence[str], quotas: Sequence[tuple[str, float]]
    ) -> Peek:
        """See ``SourceStore.peek``."""
        now = self.clock.now()
        records = {}
        for name in sources:
            state = self._sources.get((lane, name))
            records[name] = EMPTY_RECORD if state is None else state.record()
        use = {}
        for name, window in quotas:
            state = self._sources.get((lane, name))
            live = [] if state is None else state.window.entries.values()
            held = [entry.tokens for entry in live if entry.at > now - window]
            use[name] = QuotaUse(len(held), sum(held))
        return Peek(records, use)

    async def aclose(self) -> None:
        """Nothing to release."""

    def mirror(self, lane: str, ask: Ask, tokens: int | None = None) -> None:
        """Keep a reservation a shared store granted (or its final ``tokens``), unchecked.

        ``FallbackStore`` mirrors its replica's own shared grants here, so a
        Redis outage starts from the quota this replica already spent, not
        from an empty window.
        """
        state = self._state(lane, ask.quota_source)
        state.window_seconds = ask.window
        if ask.ticket in state.window.entries:
            if tokens is not None:
                state.window.settle(ask.ticket, tokens)
            return
        now = self.clock.now()
        state.window.expire(ask.window, now)
        state.window.add(Entry(ask.ticket, now, ask.tokens if tokens is None else tokens))

    def adopt(self, other: MemoryStore, keys: Iterable[tuple[str, str]]) -> None:
        """Take over ``other``'s state of each ``(scope, source)`` in ``keys`` (a config reload).

        The state objects themselves are shared, not copied: a call still running
        on the old configuration settles its reservation where the new one counts.
        Keys ``other`` never saw are skipped.
        """
        for key in keys:
            state = other._sources.get(key)
            if state is not None:
                self._sources[key] = state

    def forget_outcomes(self) -> None:
        """Drop outcome logs and probe leases (after a replay), keeping the quota windows."""
        for state in self._sources.values():
            state.marks.clear()
            state.last_ok = None
            state.probe = None

    def dump(self) -> list[SourceDump]:
        """Everything held, for replay into a shared store."""
        return [
            SourceDump(lane, source, s.window_seconds, tuple(s.window.entries.values()), s.record())
            for (lane, source), s in self._sources.items()
        ]

    def _take(self, lane: str, ask: Ask, now: float) -> Refusal | None:
        state = self._state(lane, ask.source)
        quota = self._state(lane, ask.quota_source)
        quota.window_seconds = ask.window
        if ask.probe > 0:
            held = state.probe_wait(now)
            if held > 0:
                return Refusal(ask.source, held, PROBE)
        if ask.quota_limited:
            wait = quota.window.reserve(
                ask.ticket, ask.tokens, rpm=ask.rpm, tpm=ask.tpm, window=ask.window, now=now
            )
            if wait > 0:
                return Refusal(ask.source, wait, QUOTA)
        if ask.probe > 0:
            state.probe = (ask.ticket, now + ask.probe)
        return None

    def _state(self, lane: str, source: str) -> _SourceState:
        key = (lane, source)
        state = self._sources.get(key)
        if state is None:
            state = self._sources[key] = _SourceState()
        return state
