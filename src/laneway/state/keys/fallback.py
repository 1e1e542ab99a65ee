"""``FallbackKeyLedger``: key limits in Redis while it answers, shares of them while it does not.

The same guarantees ``FallbackStore`` gives source quotas (``laneway.state.outage``). Each operation
gets ``timeout`` seconds; on an error or timeout the ledger logs once, counts
an outage and serves from this process's memory, trying Redis again at most
every ``retry_every`` seconds (and on a timer, so an idle replica comes back
too): a dead Redis costs one timeout per interval, not one per call.

During an outage each replica holds each key to its share of ``rpm``,
``tpm`` and ``max_concurrency`` (at least one), and of what was left of each
budget: ``fallback_share`` when configured, else one over the replicas last
seen serving keys (each says so every ``heartbeat`` seconds). The local
window is not empty at the cut: every grant Redis made this replica is
mirrored in memory (a timestamp for an rpm-only key), so what the replica
used before the outage counts against its share; budgets start from the
spend Redis last reported to this replica. For one window after Redis
returns a grant must still fit the share, since Redis learns of another
replica's local grants only when that one reconnects.

Every call granted locally is kept (``LocalCall``) and replayed into Redis
when it answers again, with its requests, tokens, real cost and, while it
runs, its slot; Redis applies each once (``key_redis.REPLAY``), so a replay
cut midway is simply run again. A call Redis granted that ended during the
outage is settled there then (its real cost, its slot freed). Then budgets
and windows hold the outage's spend, and a budget the replicas exhausted
together refuses.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable

from laneway.core.clock import TimeSource
from laneway.policy.budget import SECONDS_A_DAY, BudgetCap, period_name
from laneway.state.keys.ledger import (
    BUDGET_LIMITS,
    KeyAsk,
    KeyGrant,
    KeyRefusal,
    LocalCall,
    Spend,
    counters,
    key_owner,
    team_owner,
)
from laneway.state.keys.memory import MemoryKeyLedger
from laneway.state.keys.redis_ledger import RedisKeyLedger
from laneway.state.outage import SharedOrLocal, nothing

logger = logging.getLogger("laneway.state")

REPLAY_TIMEOUT = 10.0
"""Seconds a replay may take: an outage's calls, in one pipeline, may be thousands."""


class FallbackKeyLedger(SharedOrLocal):
    """Redis while it answers, this replica's share in memory while it does not."""

    def __init__(
        self,
        shared: RedisKeyLedger,
        clock: TimeSource,
        *,
        timeout: float = 0.5,
        retry_every: float = 1.0,
        fallback_share: float | None = None,
        heartbeat: float = 5.0,
    ) -> None:
        super().__init__(
            clock,
            timeout=timeout,
            retry_every=retry_every,
            fallback_share=fallback_share,
            heartbeat=heartbeat,
            resync_timeout=max(timeout, REPLAY_TIMEOUT),
        )
        self.shared = shared
        self.local = MemoryKeyLedger(clock)
        self.replayed = 0
        """Calls replayed into Redis after outages (a counter for metrics)."""
        self._known: Spend = {}
        """Each counter's spend as Redis last reported it to this replica."""
        self._known_day = -1
        self._seeded: set[str] = set()
        """The counters started from ``_known`` in this outage."""
        self._caps: dict[str, float] = {}
        """This replica's share of each capped counter's budget in this outage, by counter."""
        self._calls: dict[str, LocalCall] = {}
        self._unsettled: dict[str, tuple[KeyAsk, int | None, float | None]] = {}
        """Calls Redis granted whose settlement could not reach it, to settle on its return."""
        self._held_here: set[str] = set()
        """Calls settled through Redis whose reservation this replica holds too."""

    async def reserve(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """See ``KeyLedger.reserve``."""
        self._start_beating("keys")
        if self._down_since is not None:
            await self._try(nothing)  # at most once a retry interval: replays if Redis is back
            if self._down_since is not None:
                return await self._reserve_locally(ask)
        if self._recovering(ask):
            return await self._reserve_within_share(ask)
        answer = await self._try(lambda: self.shared.reserve_reporting(ask))
        if answer is None:
            return await self._reserve_locally(ask)
        reserved, spend = answer
        if spend is not None:
            self._mirror(ask, spend)
        return reserved

    async def settle(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> Spend:
        """See ``KeyLedger.settle``: where the call was granted (memory, or Redis)."""
        call = self._calls.get(ask.ticket)
        if call is not None:
            call.running = False
            call.tokens = call.tokens if tokens is None else tokens
            call.usd = call.usd if usd is None else usd
            return await self.local.settle(ask, tokens, usd)
        if ask.tpm is not None or ask.max_concurrency is not None or ask.ticket in self._held_here:
            self._held_here.discard(ask.ticket)
            await self.local.settle(ask, tokens, None)
        spend = await self._try(lambda: self.shared.settle_reporting(ask, tokens, usd))
        if spend is None:  # Redis is away: it learns the call's real figures when it returns
            self._unsettled[ask.ticket] = (ask, tokens, usd)
            return {}
        self._remember(spend)
        return spend

    async def read_spend(self, names: Iterable[str]) -> Spend:
        """See ``KeyLedger.read_spend``: Redis's figures, this process's while it is away."""
        wanted = list(names)
        shared = await self._try(lambda: self.shared.read_spend(wanted))
        return self.local.spend(wanted) if shared is None else shared

    async def claim(self, name: str, ttl: float) -> bool:
        """See ``KeyLedger.claim``: in this process, then in Redis; while Redis is away the
        claim is this process's alone (another replica may claim the same name)."""
        if not await self.local.claim(name, ttl):
            return False
        shared = await self._try(lambda: self.shared.claim(name, ttl))
        return True if shared is None else shared

    async def aclose(self) -> None:
        """Stop the heartbeat; close Redis's connections."""
        await self._stop_beating()
        await self.shared.aclose()

    def _mirror(self, ask: KeyAsk, spend: Spend) -> None:
        """Keep a shared grant in memory: the replica's own use, and the key's spend."""
        if ask.rpm is not None or ask.tpm is not None or ask.max_concurrency is not None:
            self.local.mirror(ask)
        if ask.budgets:
            self._remember(spend)

    def _remember(self, spend: Spend) -> None:
        """Keep counters as Redis reported them; on a new day, forget past periods'."""
        day = int(self.clock.wall() // SECONDS_A_DAY)
        if day != self._known_day:
            self._known_day = day
            current = {period_name(p, self.clock.wall()) for p in BUDGET_LIMITS}
            self._known = {n: v for n, v in self._known.items() if n.rpartition(":")[2] in current}
        self._known.update(spend)

    def _recovering(self, ask: KeyAsk) -> bool:
        """True in the window after an outage, for a key with a window or slots."""
        if self._recovered_at is None:
            return False
        if ask.rpm is None and ask.tpm is None and ask.max_concurrency is None:
            return False
        return self.clock.now() < self._recovered_at + ask.window

    async def _reserve_within_share(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """A grant in the window after an outage: it must fit this replica's share, then Redis.

        Budgets are left to Redis: every replica replays its outage spend as it reconnects.
        """
        windows = dataclasses.replace(self._cut(ask), usd=0.0, budgets=())
        local = await self.local.reserve(windows)
        if isinstance(local, KeyRefusal):
            return dataclasses.replace(local, cap=_cap_of(ask, local))
        answer = await self._try(lambda: self.shared.reserve_reporting(ask))
        if answer is None:
            await self.local.release(windows)
            return await self._reserve_locally(ask)
        reserved, spend = answer
        if isinstance(reserved, KeyRefusal):
            await self.local.release(windows)
            return reserved
        self._held_here.add(ask.ticket)
        if spend is not None:
            self._remember(spend)
        return reserved

    async def _reserve_locally(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """Reserve ``ask`` on this replica's share; refusals name the key's own limit."""
        self._seed(ask)
        reserved = await self.local.reserve(self._cut(ask))
        if isinstance(reserved, KeyRefusal):
            return dataclasses.replace(reserved, cap=_cap_of(ask, reserved))
        self.local_grants += 1
        wall = self.clock.wall()
        names = tuple(c.name for c in counters(ask, wall))
        tokens = ask.tokens if ask.tpm is None else min(ask.tokens, ask.tpm)
        self._calls[ask.ticket] = LocalCall(ask, wall, names, tokens, ask.usd)
        return reserved

    def _seed(self, ask: KeyAsk) -> None:
        """At a counter's first local call of an outage: its spend as Redis last said, and
        the budget cap of this replica's share of what was left."""
        share = self.share
        for counter in counters(ask, self.clock.wall()):
            name = counter.name
            if name in self._seeded:
                continue
            self._seeded.add(name)
            if name in self._known:
                self.local.seed_spend({name: self._known[name]})
            if counter.cap is not None:
                spent = self.local.spend([name])[name]
                self._caps[name] = spent + share * max(counter.cap.usd - spent, 0.0)

    def _cut(self, ask: KeyAsk) -> KeyAsk:
        """``ask`` with its limits cut to this replica's share (at least one of each)."""
        share = self.share
        budgets = tuple(
            BudgetCap(c.cap.owner, c.cap.period, self._caps.get(c.name, c.cap.usd))
            for c in counters(ask, self.clock.wall())
            if c.cap is not None
        )
        return dataclasses.replace(
            ask,
            rpm=_part(ask.rpm, share),
            tpm=_part(ask.tpm, share),
            max_concurrency=_part(ask.max_concurrency, share),
            budgets=budgets,
        )

    async def _heartbeat(self, ttl: float) -> int:
        return await self.shared.heartbeat(self.replica, ttl)

    async def _resync(self) -> str:
        await self.shared.reconnect()  # the outage may have cut the pool's idle connections
        calls, spent = await self._replay()
        self.replayed += calls
        self._seeded.clear()
        self._caps.clear()
        return f"{calls} call(s) counted here replayed into it (${spent:.6f} spent)"

    def _log_outage(self, error: BaseException) -> None:
        logger.warning(
            "key limits: shared state unreachable (%s); holding each key to %.0f%% of its "
            "limits and of its remaining budgets in this process (%s) until it returns",
            type(error).__name__,
            100 * self.share,
            self._share_source(),
        )

    def _log_recovery(self, summary: str) -> None:
        logger.warning("key limits: shared state is back; %s", summary)

    async def _replay(self) -> tuple[int, float]:
        """Replay every local call into Redis, then settle there the calls Redis granted
        that ended while it was away; return how many calls were replayed, and their USD.

        Calls granted or settled while a pass ran go in the next pass (Redis
        applies only what changed), so none is lost to the replay's own await.
        """
        replayed, spent = 0, 0.0
        while self._calls:
            calls = list(self._calls.values())
            before = [(call.tokens, call.usd, call.running) for call in calls]
            await self.shared.replay(calls)
            for call, figures in zip(calls, before, strict=True):
                if (call.tokens, call.usd, call.running) == figures:
                    del self._calls[call.ask.ticket]
                    replayed, spent = replayed + 1, spent + call.usd
                    if call.running:  # settled through Redis, and here too
                        self._held_here.add(call.ask.ticket)
        for ticket, (ask, tokens, usd) in list(self._unsettled.items()):
            await self.shared.settle_reporting(ask, tokens, usd)
            del self._unsettled[ticket]
        return replayed, spent


def _part(limit: int | None, share: float) -> int | None:
    """This replica's part of a limit: at least one, or ``None`` for no limit."""
    return None if limit is None else max(math.floor(limit * share), 1)


def _cap_of(ask: KeyAsk, refusal: KeyRefusal) -> float:
    """The key's own figure for the limit that refused: the caller knows that one."""
    limit = refusal.limit
    caps = {"rpm": ask.rpm, "tpm": ask.tpm, "max_concurrency": ask.max_concurrency}
    if limit in caps:
        cap = caps[limit]
        assert cap is not None
        return float(cap)
    owner = key_owner(ask.key) if refusal.team is None else team_owner(refusal.team)
    budget = next(b for b in ask.budgets if b.owner == owner and BUDGET_LIMITS[b.period] == limit)
    return budget.usd
