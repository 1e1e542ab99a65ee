"""A sliding window of quota reservations: the reference semantics of every store.

The Redis store's Lua script follows this code step for step; the contract
tests in ``tests/state`` hold both to the same answers. Pure: time comes in
as ``now``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Entry:
    """One quota reservation: its ticket, when it was made, and its tokens."""

    ticket: str
    at: float
    tokens: int


@dataclass(slots=True)
class SlidingWindow:
    """One source's reservations over the last ``window`` seconds, oldest first."""

    entries: OrderedDict[str, Entry] = field(default_factory=OrderedDict)
    tokens: int = 0

    def reserve(
        self,
        ticket: str,
        tokens: int,
        *,
        rpm: int | None,
        tpm: int | None,
        window: float,
        now: float,
    ) -> float:
        """Reserve one request of ``tokens``; return 0, or the seconds until it would fit.

        A request larger than the whole ``tpm`` is counted as ``tpm``: it waits
        for an empty window instead of waiting forever.
        """
        self.expire(window, now)
        if tpm is not None:
            tokens = min(tokens, tpm)
        wait = max(self._rpm_wait(rpm, window, now), self._tpm_wait(tpm, tokens, window, now))
        if wait > 0:
            return wait
        self.add(Entry(ticket, now, tokens))
        return 0.0

    def settle(self, ticket: str, tokens: int) -> None:
        """Replace a reservation's estimate with the tokens really used."""
        entry = self.entries.get(ticket)
        if entry is not None:
            self.tokens += tokens - entry.tokens
            self.entries[ticket] = Entry(ticket, entry.at, tokens)

    def release(self, ticket: str) -> None:
        """Drop a reservation entirely."""
        entry = self.entries.pop(ticket, None)
        if entry is not None:
            self.tokens -= entry.tokens

    def add(self, entry: Entry) -> None:
        """Insert a reservation in time order (merged ones may be older than the newest)."""
        newest = next(reversed(self.entries.values()), None)
        self.entries[entry.ticket] = entry
        self.tokens += entry.tokens
        if newest is not None and entry.at < newest.at:
            self.entries = OrderedDict(sorted(self.entries.items(), key=lambda kv: kv[1].at))

    def expire(self, window: float, now: float) -> None:
        """Drop reservations made ``window`` seconds ago or earlier."""
        while self.entries:
            oldest = next(iter(self.entries.values()))
            if oldest.at > now - window:
                return
            self.release(oldest.ticket)

    def _rpm_wait(self, rpm: int | None, window: float, now: float) -> float:
        if rpm is None or len(self.entries) < rpm:
            return 0.0
        frees = list(self.entries.values())[len(self.entries) - rpm]
        return frees.at + window - now

    def _tpm_wait(self, tpm: int | None, tokens: int, window: float, now: float) -> float:
        excess = 0 if tpm is None else self.tokens + tokens - tpm
        for entry in self.entries.values():
            if excess <= 0:
                break
            excess -= entry.tokens
            if excess <= 0:
                return entry.at + window - now
        return 0.0
