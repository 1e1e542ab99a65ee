"""``MemoryKeyLedger``: every key's windows, slots and spend in this process.

The ledger without ``state.url``, and the fallback while Redis is away
(``laneway.state.keys.fallback``). Every method runs without awaiting
anything, so each is atomic under asyncio.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from laneway.core.clock import TimeSource
from laneway.policy.budget import PERIODS, SECONDS_A_DAY, over_budget, period_name
from laneway.state.keys.ledger import (
    CONCURRENCY_WAIT,
    PRUNE_RUNNING_AT,
    SLOT_LEASE,
    Counter,
    KeyAsk,
    KeyGrant,
    KeyRefusal,
    Spend,
    counters,
    key_owner,
    refusal_of,
)
from laneway.state.window import Entry, SlidingWindow


def _current(wall: float) -> frozenset[str]:
    """The period names current at ``wall``: a counter named otherwise is of a past period."""
    return frozenset(period_name(period, wall) for period in PERIODS)


@dataclass(slots=True)
class _KeyState:
    window: SlidingWindow = field(default_factory=SlidingWindow)
    """Reservations of a key with a ``tpm``: each one's tokens, settled by ticket."""
    times: Timestamps = field(default_factory=lambda: Timestamps())
    """When each request of a key with an ``rpm`` and no ``tpm`` was made, oldest first."""
    running: dict[str, float] = field(default_factory=dict)
    held: dict[str, tuple[float, tuple[str, ...]]] = field(default_factory=dict)
    """Each running call's reserved USD and the counters it is counted in."""


class MemoryKeyLedger:
    """Every key's figures in this process (no ``state.url``, or Redis unreachable)."""

    def __init__(self, clock: TimeSource) -> None:
        self.clock = clock
        self._keys: dict[str, _KeyState] = {}
        self._spent: Spend = {}
        """USD by counter name: keys' and teams' (a team's is its keys' together)."""
        self._day = -1
        """The day number the counters were last pruned on."""
        self._claims: dict[str, float] = {}
        """Claimed names (``claim``) and the wall time each claim ends."""

    async def reserve(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """See ``KeyLedger.reserve``."""
        wall = self.clock.wall()
        state = self._keys.setdefault(ask.key, _KeyState())
        if len(state.running) >= (ask.max_concurrency or PRUNE_RUNNING_AT):
            state.running = {t: until for t, until in state.running.items() if until > wall}
        if ask.max_concurrency is not None and len(state.running) >= ask.max_concurrency:
            return KeyRefusal("max_concurrency", ask.max_concurrency, CONCURRENCY_WAIT)
        refusal = self._window_refusal(state, ask, wall)
        if refusal is not None:
            return refusal
        found = self._counted(ask, wall)
        if ask.budgets:
            capped = [c for c in found if c.cap is not None]
            spent = [self._spent.get(c.name, 0.0) for c in capped]
            caps = [c.cap for c in capped if c.cap is not None]
            over = over_budget(caps, spent, ask.usd, wall)
            if over is not None:
                self._unreserve(state, ask)
                return refusal_of(over.budget, over.spent, over.seconds)
        names = tuple(c.name for c in found)
        state.running[ask.ticket] = wall + SLOT_LEASE
        state.held[ask.ticket] = (ask.usd, names)
        for name in names:
            self._spent[name] = self._spent.get(name, 0.0) + ask.usd
        return _grant(state, ask, wall)

    async def settle(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> Spend:
        """See ``KeyLedger.settle``."""
        state = self._keys.get(ask.key)
        if state is None:
            return {}
        if tokens is not None:
            state.window.settle(ask.ticket, tokens)
        state.running.pop(ask.ticket, None)
        held = state.held.pop(ask.ticket, None)
        if held is None:
            return {}
        reserved, names = held
        spent = self._spent
        for name in names:
            if usd is not None and name in spent:
                spent[name] += usd - reserved
        return {name: spent[name] for name in names if name in spent}

    async def aclose(self) -> None:
        """Nothing to release."""

    async def claim(self, name: str, ttl: float) -> bool:
        """See ``KeyLedger.claim`` (in this process only)."""
        wall = self.clock.wall()
        if self._claims.get(name, -1.0) > wall:
            return False
        if len(self._claims) >= PRUNE_RUNNING_AT:
            self._claims = {n: until for n, until in self._claims.items() if until > wall}
        self._claims[name] = wall + ttl
        return True

    def mirror(self, ask: KeyAsk) -> None:
        """Count a call another ledger (Redis) granted, as if granted here; no limit checked.

        While Redis answers, ``FallbackKeyLedger`` keeps this replica's own
        requests, tokens and slots here, so the share it may use during an
        outage starts from what it already used. Spend is not mirrored: the
        outage starts from the spend Redis last reported.
        """
        state = self._keys.get(ask.key)
        if state is None:
            state = self._keys[ask.key] = _KeyState()
        wall = self.clock.wall()
        if ask.tpm is not None:
            state.window.expire(ask.window, wall)
            state.window.add(Entry(ask.ticket, wall, min(ask.tokens, ask.tpm)))
        elif ask.rpm is not None:
            state.times.expire(wall - ask.window)
            state.times.append(wall)
        if ask.max_concurrency is not None:
            state.running[ask.ticket] = wall + SLOT_LEASE

    async def release(self, ask: KeyAsk) -> None:
        """Undo a reservation entirely: request, tokens, slot and spend (Redis refused it)."""
        state = self._keys.get(ask.key)
        if state is None:
            return
        if ask.tpm is not None:
            state.window.release(ask.ticket)
        elif ask.rpm is not None and state.times:
            state.times.pop()
        state.running.pop(ask.ticket, None)
        held = state.held.pop(ask.ticket, None)
        if held is not None:
            reserved, names = held
            for name in names:
                if name in self._spent:
                    self._spent[name] -= reserved

    def seed_spend(self, spent: Mapping[str, float]) -> None:
        """Start counters from figures known elsewhere (by counter name)."""
        self._spent.update(spent)

    def spent(self, key: str, period: str) -> float:
        """USD counted for ``key`` in ``period`` (a period name: ``2026-12``), reservations
        included."""
        return self._spent.get(f"{key_owner(key)}:{period}", 0.0)

    def spend(self, names: Iterable[str]) -> Spend:
        """USD counted in each of the counters ``names`` (0 for one never counted)."""
        return {name: self._spent.get(name, 0.0) for name in names}

    async def read_spend(self, names: Iterable[str]) -> Spend:
        """See ``KeyLedger.read_spend``."""
        return self.spend(names)

    def _counted(self, ask: KeyAsk, wall: float) -> tuple[Counter, ...]:
        """``ask``'s counters; on a new day, first drop the counters of periods that ended."""
        day = int(wall // SECONDS_A_DAY)
        if day != self._day:
            self._day = day
            current = _current(wall)
            self._spent = {n: v for n, v in self._spent.items() if n.rpartition(":")[2] in current}
        return counters(ask, wall)

    def _window_refusal(self, state: _KeyState, ask: KeyAsk, wall: float) -> KeyRefusal | None:
        if ask.tpm is None:
            return None if ask.rpm is None else _rpm_refusal(state.times, ask.rpm, ask.window, wall)
        wait = state.window.reserve(
            ask.ticket, ask.tokens, rpm=ask.rpm, tpm=ask.tpm, window=ask.window, now=wall
        )
        if wait <= 0:
            return None
        if ask.rpm is not None and len(state.window.entries) >= ask.rpm:
            return KeyRefusal("rpm", ask.rpm, wait)
        assert ask.tpm is not None
        return KeyRefusal("tpm", ask.tpm, wait)

    @staticmethod
    def _unreserve(state: _KeyState, ask: KeyAsk) -> None:
        """Take back the request ``_window_refusal`` just counted (a budget refused the call)."""
        if ask.tpm is not None:
            state.window.release(ask.ticket)
        elif ask.rpm is not None:
            state.times.pop()


class Timestamps:
    """Request times, oldest first, packed 8 bytes each in one ``array``.

    All an ``rpm`` needs. The general ``SlidingWindow`` spends ~250 bytes a
    request (ticket, entry, ordered-dict node), which for a key allowed more
    calls than it makes held every call of the last minute: tens of MiB at a
    few thousand calls a second. Expired times are skipped by moving ``start``
    and cut off the array once they are half of it (amortised O(1)).
    """

    __slots__ = ("start", "times")

    def __init__(self) -> None:
        self.times = array("d")
        self.start = 0

    def __len__(self) -> int:
        return len(self.times) - self.start

    def expire(self, cutoff: float) -> None:
        """Drop the times at or before ``cutoff``."""
        times, start = self.times, self.start
        end = len(times)
        while start < end and times[start] <= cutoff:
            start += 1
        if start > 1024 and start * 2 > end:
            del times[:start]
            start = 0
        self.start = start

    def oldest(self) -> float:
        """The time of the oldest request still counted."""
        return self.times[self.start]

    def nth_newest(self, n: int) -> float:
        """The time of the ``n``-th newest request (1: the newest)."""
        return self.times[len(self.times) - n]

    def append(self, wall: float) -> None:
        self.times.append(wall)

    def pop(self) -> None:
        """Forget the newest request."""
        self.times.pop()


def _rpm_refusal(times: Timestamps, rpm: int, window: float, wall: float) -> KeyRefusal | None:
    """Count one request at ``wall``, or refuse it: ``SlidingWindow`` with no tokens to track."""
    times.expire(wall - window)
    if len(times) >= rpm:
        return KeyRefusal("rpm", rpm, times.nth_newest(rpm) + window - wall)
    times.append(wall)
    return None


def _grant(state: _KeyState, ask: KeyAsk, wall: float) -> KeyGrant:
    """How full the key's window is after a grant (empty when it has no rpm or tpm).

    An rpm-only key counts bare times (``_rpm_refusal``); a key with tpm, reservations.
    """
    if ask.tpm is None:
        times = state.times
        if ask.rpm is None or not times:
            return KeyGrant()
        return KeyGrant(len(times), 0, max(times.oldest() + ask.window - wall, 0.0))
    window = state.window
    if not window.entries:
        return KeyGrant()
    oldest = next(iter(window.entries.values()))
    return KeyGrant(len(window.entries), window.tokens, max(oldest.at + ask.window - wall, 0.0))
