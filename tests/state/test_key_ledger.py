"""One contract for the per-key ledgers: in memory and on Redis, in virtual time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from laneway.core.clock import FakeClock
from laneway.policy.budget import period_resets
from laneway.state.keys.ledger import SLOT_LEASE, KeyAsk, KeyGrant, KeyLedger, KeyRefusal
from laneway.state.keys.memory import MemoryKeyLedger, Timestamps
from laneway.state.keys.redis_ledger import RedisKeyLedger
from tests.state.key_asks import key_ask

MAY_31_2026_23H = datetime(2026, 5, 31, 23, 0, tzinfo=UTC).timestamp()


@pytest.fixture(params=["memory", "redis"])
def ledger(request) -> tuple[KeyLedger, FakeClock]:
    clock = FakeClock(wall_start=MAY_31_2026_23H)
    if request.param == "memory":
        return MemoryKeyLedger(clock), clock
    client = request.getfixturevalue("redis_client")
    prefix = request.getfixturevalue("redis_prefix")
    return RedisKeyLedger(client, clock, prefix=prefix), clock


def ask(ticket: str, **limits) -> KeyAsk:
    return key_ask("team", ticket, **limits)


async def test_rpm_refuses_with_the_wait_then_frees(ledger) -> None:
    store, clock = ledger
    for n in range(2):
        assert isinstance(await store.reserve(ask(f"t{n}", rpm=2)), KeyGrant)
        clock.advance(10.0)
    refusal = await store.reserve(ask("t9", rpm=2))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "rpm" and refusal.cap == 2
    assert refusal.seconds == pytest.approx(40.0)
    clock.advance(40.0)
    assert isinstance(await store.reserve(ask("t9", rpm=2)), KeyGrant)


async def test_a_call_its_budget_refuses_takes_no_rpm_slot(ledger) -> None:
    store, _ = ledger
    assert isinstance(await store.reserve(ask("t1", rpm=2, usd=0.6, daily=1.0)), KeyGrant)
    refusal = await store.reserve(ask("t2", rpm=2, usd=0.6, daily=1.0))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "daily_budget"
    assert isinstance(await store.reserve(ask("t3", rpm=2)), KeyGrant)
    refusal = await store.reserve(ask("t4", rpm=2))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "rpm"


async def test_tpm_settles_at_real_tokens(ledger) -> None:
    store, _ = ledger
    first = ask("t1", tokens=80, tpm=100)
    assert isinstance(await store.reserve(first), KeyGrant)
    refusal = await store.reserve(ask("t2", tokens=50, tpm=100))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "tpm"
    await store.settle(first, 10, None)
    assert isinstance(await store.reserve(ask("t2", tokens=50, tpm=100)), KeyGrant)


async def test_concurrency_slot_freed_by_settle_or_by_its_lease(ledger) -> None:
    store, clock = ledger
    first = ask("t1", max_concurrency=1)
    assert isinstance(await store.reserve(first), KeyGrant)
    refusal = await store.reserve(ask("t2", max_concurrency=1))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "max_concurrency"
    await store.settle(first, None, None)
    assert isinstance(await store.reserve(ask("t2", max_concurrency=1)), KeyGrant)
    clock.advance(SLOT_LEASE + 1)
    assert isinstance(await store.reserve(ask("t3", max_concurrency=1)), KeyGrant)


async def test_budget_counts_reservations_and_settles_real_cost(ledger) -> None:
    store, _ = ledger
    first = ask("t1", usd=0.6, daily=1.0)
    assert isinstance(await store.reserve(first), KeyGrant)
    refusal = await store.reserve(ask("t2", usd=0.6, daily=1.0))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "daily_budget"
    assert refusal.spent == pytest.approx(0.6)
    assert refusal.seconds == pytest.approx(3600.0)
    await store.settle(first, None, 0.25)
    assert isinstance(await store.reserve(ask("t2", usd=0.6, daily=1.0)), KeyGrant)


async def test_unknown_cost_keeps_the_estimate(ledger) -> None:
    store, _ = ledger
    first = ask("t1", usd=0.6, monthly=1.0)
    assert isinstance(await store.reserve(first), KeyGrant)
    await store.settle(first, None, None)
    refusal = await store.reserve(ask("t2", usd=0.6, monthly=1.0))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "monthly_budget"


async def test_a_new_day_starts_a_new_daily_budget_but_not_a_new_month(ledger) -> None:
    store, clock = ledger
    assert isinstance(await store.reserve(ask("t1", usd=0.9, daily=1.0, monthly=1.5)), KeyGrant)
    clock.advance(3600.0 + 1)  # June 1st: a new day and a new month
    assert isinstance(await store.reserve(ask("t2", usd=0.9, daily=1.0, monthly=1.5)), KeyGrant)
    clock.advance(86_400.0)
    refusal = await store.reserve(ask("t3", usd=0.9, daily=1.0, monthly=1.5))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "monthly_budget"


def test_period_resets_at_month_end() -> None:
    assert period_resets(MAY_31_2026_23H) == (3600.0, 3600.0)
    assert period_resets(datetime(2026, 12, 31, 12, tzinfo=UTC).timestamp()) == (43_200.0, 43_200.0)


async def test_a_grant_says_how_full_the_window_is(ledger) -> None:
    store, clock = ledger
    first = await store.reserve(ask("t1", tokens=30, rpm=5, tpm=1000))
    assert first == KeyGrant(1, 30, 60.0)
    clock.advance(15.0)
    second = await store.reserve(ask("t2", tokens=20, rpm=5, tpm=1000))
    assert isinstance(second, KeyGrant)
    assert (second.requests, second.tokens) == (2, 50)
    assert second.frees_in == pytest.approx(45.0)
    assert await store.reserve(ask("t3", max_concurrency=5)) == KeyGrant(), "no window, no figures"
    assert await store.reserve(KeyAsk("solo", "s1", rpm=3)) == KeyGrant(1, 0, 60.0)
    clock.advance(5.0)
    assert await store.reserve(KeyAsk("solo", "s2", rpm=3)) == KeyGrant(2, 0, 55.0)


def test_timestamps_forget_expired_times_and_compact() -> None:
    times = Timestamps()
    for n in range(3000):
        times.append(float(n))
    times.expire(1999.0)
    assert len(times) == 1000 and times.nth_newest(1000) == 2000.0
    assert len(times.times) == 1000, "expired times are cut once they are half the array"
    times.pop()
    assert len(times) == 999 and times.nth_newest(1) == 2998.0
