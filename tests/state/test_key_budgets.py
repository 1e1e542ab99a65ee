"""Budgets of every period, and a team's budget shared by its keys: in memory and on Redis."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from laneway.policy.budget import BudgetCap
from laneway.state.keys.ledger import KeyAsk, KeyGrant, KeyRefusal, key_owner, team_owner
from tests.state.test_key_ledger import ledger

__all__ = ["ledger"]

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
