"""Budgets of every period, and a team's budget shared by its keys: in memory and on Redis."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from laneway.core.clock import FakeClock
from laneway.policy.budget import BudgetCap
from laneway.state.keys.ledger import KeyAsk, KeyGrant, KeyRefusal, key_owner, team_owner
from tests.proxy import TcpProxy
from tests.state.test_fallback import proxy
from tests.state.test_key_ledger import ledger
from tests.state.test_key_outage import replica

__all__ = ["ledger", "proxy"]

WEEK = 7 * 86_400.0
MAY_31_2026_23H = datetime(2026, 5, 31, 23, 0, tzinfo=UTC).timestamp()  # a Sunday
TEAM_MONTH = BudgetCap(team_owner("ml"), "month", 1.0)


def of_team(key: str, ticket: str, usd: float) -> KeyAsk:
    return KeyAsk(key, ticket, usd=usd, budgets=(TEAM_MONTH,))


async def test_a_teams_budget_is_spent_by_all_its_keys_and_its_refusal_names_it(
    ledger,
) -> None:
    store, _ = ledger
    first = of_team("alice", "t1", 0.6)
    assert isinstance(await store.reserve(first), KeyGrant)
    refusal = await store.reserve(of_team("bob", "t2", 0.6))
    assert isinstance(refusal, KeyRefusal)
    assert (refusal.limit, refusal.team, refusal.cap) == ("monthly_budget", "ml", 1.0)
    assert refusal.spent == pytest.approx(0.6)
    spend = await store.settle(first, None, 0.25)
    assert spend["team:ml:2026-05"] == pytest.approx(0.25), "the real cost, the estimate gone"
    assert spend["key:alice:2026-05"] == pytest.approx(0.25)
    assert isinstance(await store.reserve(of_team("bob", "t2", 0.6)), KeyGrant)
    refusal = await store.reserve(of_team("carol", "t3", 0.2))
    assert isinstance(refusal, KeyRefusal) and refusal.spent == pytest.approx(0.85)


async def test_the_keys_own_budget_refuses_first_and_names_the_key(ledger) -> None:
    store, _ = ledger
    own = BudgetCap(key_owner("alice"), "day", 0.5)
    refusal = await store.reserve(KeyAsk("alice", "t1", usd=0.6, budgets=(own, TEAM_MONTH)))
    assert isinstance(refusal, KeyRefusal)
    assert (refusal.limit, refusal.team, refusal.cap) == ("daily_budget", None, 0.5)


async def test_a_week_resets_on_monday_and_a_total_never(ledger) -> None:
    store, clock = ledger
    caps = (BudgetCap(key_owner("k"), "week", 1.0), BudgetCap(key_owner("k"), "total", 1.5))
    assert isinstance(await store.reserve(KeyAsk("k", "t1", usd=0.9, budgets=caps)), KeyGrant)
    refusal = await store.reserve(KeyAsk("k", "t2", usd=0.2, budgets=caps))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "weekly_budget"
    assert refusal.seconds == pytest.approx(3600.0), "Monday 1 June, 00:00 UTC"
    clock.advance(3600.0)
    assert isinstance(await store.reserve(KeyAsk("k", "t2", usd=0.5, budgets=caps)), KeyGrant)
    clock.advance(WEEK)
    refusal = await store.reserve(KeyAsk("k", "t3", usd=0.2, budgets=caps))
    assert isinstance(refusal, KeyRefusal) and refusal.limit == "total_budget"
    assert refusal.spent == pytest.approx(1.4) and refusal.seconds == math.inf


async def test_while_redis_is_away_each_replica_spends_its_share_of_a_teams_budget(
    proxy: TcpProxy, redis_client, redis_prefix
) -> None:
    clock = FakeClock(wall_start=MAY_31_2026_23H)
    url = f"redis://127.0.0.1:{proxy.port}/0"
    ledger = replica(url, clock, redis_prefix, share=0.5)
    first = of_team("alice", "t1", 0.4)
    assert isinstance(await ledger.reserve(first), KeyGrant), "through Redis"
    await ledger.settle(first, None, 0.4)
    await proxy.stop()
    # $0.60 of the team's $1 was left: this replica may spend half of it, $0.30.
    during = [await ledger.reserve(of_team("bob", f"d{n}", 0.2)) for n in range(2)]
    await proxy.start()
    clock.advance(1.0)
    await ledger.reserve(KeyAsk("other", "wake"))  # Redis again: the outage's call replayed
    await ledger.aclose()
    assert isinstance(during[0], KeyGrant)
    refusal = during[1]
    assert isinstance(refusal, KeyRefusal) and (refusal.team, refusal.cap) == ("ml", 1.0)
    spent = await redis_client.get(f"{redis_prefix}:team:{{ml}}:spend:2026-05")
    assert float(spent) == pytest.approx(0.6), "the outage's $0.20 counted once in the team's"
