"""Stored keys on the request path: the store's keys held in memory, reloaded by version.

Each replica reads the store's version every ``server.key_store_poll``
seconds and, when it changed, the whole store: a key created, rotated,
revoked, blocked or edited on one replica answers (or is refused) on every
other one within that interval plus a read. A lookup is one dict read on
the secret's sha256 digest, then ``hmac.compare_digest`` on it, and a wall
clock read only for keys that expire or secrets in a rotation's grace.
While the store cannot be read, the last keys read go on answering and the
failure is logged once per outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from laneway.policy.budget import BudgetCap
from laneway.server.key_terms import KeyTerms, SpentBefore
from laneway.server.keys import Caller, make_caller
from laneway.state.keys.ledger import key_owner, team_owner
from laneway.state.keys.records import KeyRecord, Snapshot, TeamRecord
from laneway.state.keys.store import KeyStore

if TYPE_CHECKING:
    from laneway.state.keys.notices import RedisKeyNotices

log = logging.getLogger("laneway.keys")


RELISTEN = 1.0
"""Seconds between tries to subscribe again to change notices while Redis is away."""
USE_EVERY = 5.0
"""Seconds between a replica's writes of its keys' last use (a use is stamped at the next
poll of the store, so "last used" is as precise as ``server.key_store_poll``)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    digest: bytes
    key_id: str
    caller: Caller
    until: float | None
    """The earliest of the key's expiry and this secret's grace end (``None``: neither)."""


def stored_terms(record: KeyRecord, team: TeamRecord | None) -> KeyTerms:
    """The terms of a stored key: its limits, its own budget and its team's (shared by the
    team's keys)."""
    limits = record.limits
    budgets = []
    if limits.budget is not None and limits.period is not None:
        budgets.append(BudgetCap(key_owner(record.name), limits.period, limits.budget))
    if team is not None and team.limits.budget is not None and team.limits.period is not None:
        budgets.append(BudgetCap(team_owner(team.name), team.limits.period, team.limits.budget))
    team_spent = None
    if team is not None and team.spend > 0 and team.limits.budget is not None:
        team_spent = SpentBefore(team.spend, team.created_at)
    return KeyTerms(
        name=record.name,
        rpm=limits.rpm,
        tpm=limits.tpm,
        max_concurrency=limits.max_concurrency,
        budgets=tuple(budgets),
        team=record.team,
        team_spent=team_spent,
    )


class StoredKeys:
    """The store's usable keys by digest, as of ``version``."""

    def __init__(
        self,
        store: KeyStore,
        lanes: Sequence[str],
        aliases: Mapping[str, str] | None = None,
        poll: float = 0.5,
        notices: RedisKeyNotices | None = None,
    ) -> None:
        self.store = store
        self.lanes = list(lanes)
        self.aliases = dict(aliases or {})
        self.poll = poll
        self.notices = notices
        """Change notices through Redis pub/sub (``None``: the poll alone)."""
        self._nudged = asyncio.Event()
        self._listening: asyncio.Task[None] | None = None
        self._deaf = False
        self.version = -1
        self.snapshot: Snapshot | None = None
        self._by_digest: dict[bytes, _Entry] = {}
        self._made: dict[str, tuple[KeyRecord, TeamRecord | None, Caller]] = {}
        """Each usable key's caller, with the record and team it was made from."""
        self.budgeted: tuple[Caller, ...] = ()
        """The callers of usable stored keys under a budget (their own or their team's)."""
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self._opened = False
        self._loaded = asyncio.Event()
        self._used: set[str] = set()
        """Ids of the keys that authenticated a call since the last poll (one set add a call:
        the request path reads no clock and writes nothing for it)."""
        self._stamped: dict[str, float] = {}
        """When each key was last seen used (stamped at a poll), not yet written."""
        self._next_use_write = 0.0

    def caller(self, digest: bytes) -> Caller | None:
        """The caller of the usable stored key with sha256 ``digest``."""
        entry = self._by_digest.get(digest)
        if entry is None or not hmac.compare_digest(entry.digest, digest):
            return None
        if entry.until is not None and time.time() >= entry.until:
            return None
        self._used.add(entry.key_id)
        return entry.caller

    def start(self) -> None:
        """Open the store, read it, then poll its version (in the running loop)."""
        if self._task is None:
            self._task = asyncio.create_task(self._polling())
        if self.notices is not None and self._listening is None:
            self._listening = asyncio.create_task(self._listen())

    async def ready(self, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout`` s) for the first read of the store."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._loaded.wait()

    async def aclose(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listening
            self._listening = None
        if self.notices is not None:
            await self.notices.aclose()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            self._stamp()
            with contextlib.suppress(Exception):  # the last use is worth one bounded try
                async with asyncio.timeout(1.0):
                    await self.write_use()
        await self.store.close()

    async def use(self) -> dict[str, float]:
        """When each stored key (by id) was last used, this replica's latest uses included."""
        self._stamp()
        await self.write_use()
        return await self.store.last_used()

    async def write_use(self) -> None:
        """Write the keys' use stamped since the last write (in one transaction)."""
        stamped, self._stamped = self._stamped, {}
        if not stamped:
            return
        try:
            await self.store.mark_used(stamped)
        except BaseException:
            self._stamped = {**stamped, **self._stamped}  # kept for the next write
            raise

    def _stamp(self) -> None:
        """Stamp the keys used since the last poll with this poll's wall time."""
        if self._used:
            used, self._used = self._used, set()
            self._stamped.update(dict.fromkeys(used, time.time()))

    async def refresh(self) -> bool:
        """Reload when the store's version moved; True when it did."""
        if not self._opened:
            await self.store.open()
            self._opened = True
        if await self.store.version() == self.version:
            return False
        self.load(await self.store.snapshot())
        return True

    async def changed(self) -> None:
        """This replica changed the store: reload now, and tell the others through Redis (if
        that fails, they learn it at their next poll)."""
        await self.refresh()
        if self.notices is not None:
            try:
                await self.notices.publish(self.version)
            except Exception as exc:  # Redis is a nudge: the store already holds the change
                log.warning("key store change not announced through Redis: %s", exc)

    def load(self, snapshot: Snapshot) -> None:
        """Replace the keys held with ``snapshot``'s."""
        entries: dict[bytes, _Entry] = {}
        callers: dict[str, Caller] = {}
        for digest in snapshot.digests:
            record = snapshot.keys.get(digest.key_id)
            if record is None or record.blocked:
                continue
            team = snapshot.teams.get(record.team) if record.team else None
            if team is not None and team.blocked:
                continue
            caller = callers.get(record.id) or self._made_caller(record, team)
            callers[record.id] = caller
            ends = [t for t in (record.expires_at, digest.valid_until) if t is not None]
            raw = bytes.fromhex(digest.sha256)
            entries[raw] = _Entry(raw, record.id, caller, min(ends) if ends else None)
        self._by_digest = entries
        self._made = {key_id: self._made[key_id] for key_id in callers}
        self.budgeted = tuple(c for c in callers.values() if c.limits and c.limits.budgets)
        self.snapshot = snapshot
        self.version = snapshot.version
        self._loaded.set()

    def _made_caller(self, record: KeyRecord, team: TeamRecord | None) -> Caller:
        """``record``'s caller: the one made at an earlier load when the key and its team are
        unchanged (a reload after one change remakes one caller, not every one)."""
        made = self._made.get(record.id)
        if made is not None and made[0] == record and made[1] == team:
            return made[2]
        caller = self._caller(record, team)
        self._made[record.id] = (record, team, caller)
        return caller

    def _caller(self, record: KeyRecord, team: TeamRecord | None) -> Caller:
        terms = stored_terms(record, team)
        wanted = record.limits.lanes
        permitted = self.lanes if "*" in wanted else [n for n in self.lanes if n in wanted]
        spent = None
        if record.spend > 0 and terms.own_budgets:
            spent = SpentBefore(record.spend, record.created_at)
        limits = terms if terms.limited else None
        return make_caller(record.name, permitted, self.aliases, limits, spent)

    async def _polling(self) -> None:
        while True:
            try:
                self._stamp()
                await self.refresh()
                if self._stamped and time.time() >= self._next_use_write:
                    self._next_use_write = time.time() + USE_EVERY
                    await self.write_use()
            except Exception as exc:  # the store is the truth, but its outage is not ours
                if not self._failing:
                    log.warning("key store unreadable, serving its keys as last read: %s", exc)
                self._failing = True
            else:
                if self._failing:
                    log.info("key store readable again (version %d)", self.version)
                self._failing = False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll):
                    await self._nudged.wait()
            self._nudged.clear()

    async def _listen(self) -> None:
        """Reload as soon as another replica announces a change; while Redis is away, the
        poll alone (the outage logged once)."""
        assert self.notices is not None
        while True:
            try:
                async for version in self.notices.listen():
                    if self._deaf:
                        log.info("key store notices heard again through Redis")
                        self._deaf = False
                    if version is None or version != self.version:
                        self._nudged.set()
            except Exception as exc:
                if not self._deaf:
                    log.warning("key store notices unheard (Redis: %s); polling alone", exc)
                self._deaf = True
            await asyncio.sleep(RELISTEN)
