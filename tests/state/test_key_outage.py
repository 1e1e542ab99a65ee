"""Key limits through a Redis outage: each replica holds a key to its share, and what it
granted on its own is replayed into Redis, once, when Redis returns.

Two ledgers (two replicas) share one Redis through a relay the test cuts (the shared
Redis itself is never touched), on one virtual clock: windows slide only when the test
says so. A budget's figures are checked as decimals to the nano-dollar, the ledger's unit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from redis.asyncio import Redis

from laneway.core.clock import FakeClock
from laneway.metrics import Metrics
from laneway.policy.budget import periods
from laneway.state.keys.fallback import FallbackKeyLedger
from laneway.state.keys.ledger import KeyAsk, KeyGrant, KeyRefusal, LocalCall
from laneway.state.keys.redis_ledger import RedisKeyLedger
from tests.proxy import TcpProxy
from tests.state.key_asks import key_ask
from tests.state.test_fallback import proxy, warnings_about

__all__ = ["proxy"]

NOON = datetime(2026, 6, 10, 12, 0, tzinfo=UTC).timestamp()
NANO = Decimal("0.000000001")


def replica(url: str, clock: FakeClock, prefix: str, share: float | None = None):
    """A replica's ledger whose Redis calls get 2 s (a loaded machine must not fake an outage)."""
    shared = RedisKeyLedger.from_url(url, clock, prefix=prefix, timeout=2.0)
    return FallbackKeyLedger(shared, clock, timeout=2.0, retry_every=1.0, fallback_share=share)


class Caller:
    """One replica's numbered calls of key ``team``, each settled at once; counts grants."""

    def __init__(self, ledger: FallbackKeyLedger, name: str, **limits: Any) -> None:
        self.ledger = ledger
        self.name = name
        self.limits = limits
        self.asked = 0
        self.granted = 0
        self.costs: list[Decimal] = []

    async def call(self, times: int, *, estimate: float = 0.0) -> int:
        granted = 0
        for _ in range(times):
            self.asked += 1
            ask = key_ask("team", f"{self.name}{self.asked}", usd=estimate, **self.limits)
            if isinstance(await self.ledger.reserve(ask), KeyGrant):
                cost = estimate + self.asked * 1e-9  # each call's real cost differs a little
                await self.ledger.settle(ask, None, cost)
                self.costs.append(Decimal(f"{cost:.9f}"))
                granted += 1
        self.granted += granted
        return granted

    async def wake(self) -> None:
        """A call of a key without limits: enough to reach Redis (and replay) again."""
        await self.ledger.reserve(KeyAsk("other", f"{self.name}-wake"))


async def test_two_replicas_share_a_keys_rpm_through_an_outage(
    proxy: TcpProxy, redis_client, redis_prefix, caplog
) -> None:
    clock = FakeClock(wall_start=NOON)
    url = f"redis://127.0.0.1:{proxy.port}/0"
    a = Caller(replica(url, clock, redis_prefix), "a", rpm=10)
    b = Caller(replica(url, clock, redis_prefix), "b", rpm=10)
    with caplog.at_level(logging.WARNING, logger="laneway.state"):
        await a.call(1)
        await b.call(1)
        clock.advance(5.0)  # the next heartbeat: each has seen both
        before = await a.call(2) + await b.call(0)
        await proxy.stop()
        during = await a.call(10) + await b.call(10)
        scraped = scrape(a.ledger)
        await proxy.start()
        clock.advance(1.0)
        await a.wake()
        await b.wake()
        after = await a.call(5) + await b.call(5)
    for caller in (a, b):
        await caller.ledger.aclose()
    assert before == 2 and a.ledger.replicas == 2 == b.ledger.replicas
    assert (a.granted, b.granted) == (5, 5), "each its half, counting what it spent before"
    assert during == 6 and after == 0, "the minute's total is the key's rpm, never more"
    window = await redis_client.zcard(f"{redis_prefix}:key:{{team}}:q")
    assert window == 10, "Redis holds every call of the minute, the outage's replayed once"
    assert "laneway_key_ledger_backend_up 0.0" in scraped
    assert "laneway_key_ledger_outages_total 1.0" in scraped
    assert "laneway_key_ledger_local_grants_total 2.0" in scraped, "a had spent 3 of its 5"
    assert (a.ledger.replayed, b.ledger.replayed) == (2, 4)
    assert warnings_about(caplog, "holding each key to 50%") == 2, "once per replica"
    assert warnings_about(caplog, "shared state is back") == 2


async def test_outage_spend_is_replayed_and_a_budget_the_replicas_exhausted_refuses(
    proxy: TcpProxy, redis_client, redis_prefix
) -> None:
    clock = FakeClock(wall_start=NOON)
    url = f"redis://127.0.0.1:{proxy.port}/0"
    a = Caller(replica(url, clock, redis_prefix), "a", daily=2.0)
    b = Caller(replica(url, clock, redis_prefix), "b", daily=2.0)
    await a.call(1, estimate=0.3)
    await b.call(1, estimate=0.3)
    clock.advance(5.0)
    await a.call(1, estimate=0.3)
    await b.call(1, estimate=0.3)
    await proxy.stop()
    # a last heard $0.9 spent: it may use half of the $1.1 left, $1.45 in all (one call);
    # b heard $1.2: half of $0.8, $1.6 in all (one call).
    during = await a.call(5, estimate=0.3) + await b.call(5, estimate=0.3)
    await proxy.start()
    clock.advance(1.0)
    await a.wake()
    await b.wake()
    refused = await a.ledger.reserve(key_ask("team", "late", usd=0.3, daily=2.0))
    for caller in (a, b):
        await caller.ledger.aclose()
    assert during == 2
    day, month = periods(NOON)
    spent = Decimal(await redis_client.get(f"{redis_prefix}:key:{{team}}:spend:{day}"))
    assert spent.quantize(NANO) == sum(a.costs + b.costs), "every priced call, once"
    monthly = Decimal(await redis_client.get(f"{redis_prefix}:key:{{team}}:spend:{month}"))
    assert monthly.quantize(NANO) == spent.quantize(NANO)
    assert spent <= 2, "the replicas' shares kept the day's spend within the budget"
    assert isinstance(refused, KeyRefusal) and refused.limit == "daily_budget"
    assert refused.spent == pytest.approx(float(spent), abs=1e-6), "the refusal says it"


async def test_a_replay_applies_each_call_once_and_later_only_what_changed(
    redis_client, redis_prefix
) -> None:
    clock = FakeClock(wall_start=NOON)
    ledger = RedisKeyLedger(redis_client, clock, prefix=redis_prefix)
    day, month = periods(NOON)
    counted = (f"key:team:{day}", f"key:team:{month}")
    running = LocalCall(KeyAsk("team", "r1", rpm=5, max_concurrency=2), NOON, counted, 7, 0.25)
    ended = LocalCall(KeyAsk("team", "e1", rpm=5), NOON, counted, 3, 0.125, running=False)
    await ledger.replay([running, ended])
    await ledger.replay([running, ended])  # a replay cut after Redis applied it, run again
    spend_key = f"{redis_prefix}:key:{{team}}:spend:{day}"
    assert Decimal(await redis_client.get(spend_key)) == Decimal("0.375")
    assert await redis_client.zcard(f"{redis_prefix}:key:{{team}}:q") == 2
    assert await redis_client.zrange(f"{redis_prefix}:key:{{team}}:run", 0, -1) == ["r1"]
    running.usd, running.running = 0.3125, False  # it ended before the replay finished
    await ledger.replay([running, ended])
    assert Decimal(await redis_client.get(spend_key)) == Decimal("0.4375")
    assert await redis_client.zcard(f"{redis_prefix}:key:{{team}}:run") == 0
    assert await redis_client.zcard(f"{redis_prefix}:key:{{team}}:q") == 2


async def test_a_share_of_concurrency_and_refusals_naming_the_keys_own_limit() -> None:
    clock = FakeClock(wall_start=NOON)
    ledger = replica("redis://127.0.0.1:1/0", clock, "lw-unused", share=0.5)
    asks = [KeyAsk("team", f"t{n}", max_concurrency=4) for n in range(3)]
    answers = [await ledger.reserve(ask) for ask in asks]
    await ledger.settle(asks[0], None, None)
    again = await ledger.reserve(KeyAsk("team", "t9", max_concurrency=4))
    await ledger.aclose()
    assert [isinstance(a, KeyGrant) for a in answers] == [True, True, False]
    refusal = answers[2]
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "max_concurrency"
    assert refusal.cap == 4, "the caller is told the key's limit, not the replica's share"
    assert isinstance(again, KeyGrant), "a settled call frees its local slot"
    assert ledger.outages == 1 and ledger.local_grants == 3


def scrape(ledger: FallbackKeyLedger) -> str:
    metrics = Metrics()
    metrics.watch_key_ledger(ledger)
    return metrics.render()[0].decode()


async def test_an_idle_replica_replays_on_its_heartbeat(proxy: TcpProxy, redis_prefix) -> None:
    clock = FakeClock(wall_start=NOON)
    shared = RedisKeyLedger.from_url(
        f"redis://127.0.0.1:{proxy.port}/0", clock, prefix=redis_prefix, timeout=2.0
    )
    ledger = FallbackKeyLedger(shared, clock, timeout=2.0, retry_every=1.0, heartbeat=0.02)
    await proxy.stop()
    assert isinstance(await ledger.reserve(KeyAsk("team", "t1", rpm=5)), KeyGrant)
    await proxy.start()
    clock.advance(1.0)
    for _ in range(500):  # no call comes: the heartbeat alone must bring the replay
        if ledger.replayed:
            break
        await asyncio.sleep(0.01)
    await ledger.aclose()
    assert ledger.replayed == 1 and not ledger.degraded


class DeafToCancels(RedisKeyLedger):
    """A ledger whose Redis answers the first heartbeat, then never again, and whose
    heartbeat returns normally when cancelled, as redis-py 8.1's pipeline now and then does.
    """

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(Redis.from_url("redis://127.0.0.1:1/0"), clock, prefix="lw-unused")
        self.heartbeats = 0
        self.stuck = asyncio.Event()

    async def reserve_reporting(self, ask: KeyAsk) -> tuple[KeyGrant, None]:
        return KeyGrant(1, 0, 60.0), None

    async def heartbeat(self, replica: str, ttl: float) -> int:
        self.heartbeats += 1
        if self.heartbeats > 1:
            self.stuck.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.get_running_loop().create_future()
        return 1


async def test_closing_ends_the_heartbeat_even_when_redis_swallows_its_cancel() -> None:
    clock = FakeClock(wall_start=NOON)
    shared = DeafToCancels(clock)
    ledger = FallbackKeyLedger(shared, clock, timeout=60.0, heartbeat=0.01)
    await ledger.reserve(KeyAsk("team", "t1", rpm=5))  # starts the heartbeat task
    clock.advance(0.01)  # the next beat's heartbeat is due; Redis never answers it
    async with asyncio.timeout(10):  # a hang fails here, in seconds
        await shared.stuck.wait()
        await ledger.aclose()
    assert shared.heartbeats == 2, "the beat ended at the cancel, and sent none after it"


async def test_a_call_in_flight_at_the_cut_holds_its_slot_and_settles_when_redis_returns(
    proxy: TcpProxy, redis_client, redis_prefix
) -> None:
    clock = FakeClock(wall_start=NOON)
    ledger = replica(f"redis://127.0.0.1:{proxy.port}/0", clock, redis_prefix, share=0.5)
    limits: dict[str, Any] = {"max_concurrency": 4, "daily": 10.0}
    running = key_ask("team", "before", usd=0.5, **limits)
    assert isinstance(await ledger.reserve(running), KeyGrant), "through Redis"
    await proxy.stop()
    during = [key_ask("team", f"t{n}", usd=0.5, **limits) for n in range(3)]
    answers = [await ledger.reserve(ask) for ask in during]
    await ledger.settle(running, None, 0.125)  # it ends while Redis is away
    await proxy.start()
    clock.advance(1.0)
    await ledger.reserve(KeyAsk("other", "wake"))
    await ledger.settle(during[0], None, 0.25)  # replayed while running, settled in Redis
    again = await ledger.reserve(key_ask("team", "after", **limits))
    await ledger.aclose()
    assert [isinstance(a, KeyGrant) for a in answers] == [True, False, False], (
        "a share of 2 slots, one held by the call Redis granted"
    )
    day, _ = periods(NOON)
    spent = Decimal(await redis_client.get(f"{redis_prefix}:key:{{team}}:spend:{day}"))
    assert spent.quantize(NANO) == Decimal("0.375"), "real costs, the estimates gone"
    assert await redis_client.zrange(f"{redis_prefix}:key:{{team}}:run", 0, -1) == ["after"]
    assert isinstance(again, KeyGrant), "no slot is left held by the outage's calls"
