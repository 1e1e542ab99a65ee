"""A stored key's spend from before laneway (an imported LiteLLM key's) counts against its
budget in the period it came to laneway in, and in no later one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from laneway.config.models import BudgetConfig, KeyConfig
from laneway.core.clock import FakeClock
from laneway.policy.budget import BudgetCap
from laneway.server.errors import Refused
from laneway.server.key_terms import KeyTerms, SpentBefore, config_terms
from laneway.server.limits import KeyLimits
from laneway.state.keys.ledger import key_owner, team_owner
from laneway.state.keys.memory import MemoryKeyLedger

IMPORTED = datetime(2026, 12, 3, 10, tzinfo=UTC).timestamp()
KEY = KeyConfig(
    name="imported",
    sha256="0" * 64,
    budget=BudgetConfig(monthly=1.0),
    allow_unpriced=True,  # no pricer: every call is estimated at $0
)


def limits(at: float) -> KeyLimits:
    clock = FakeClock(wall_start=at)
    return KeyLimits([KEY], {"l": ("chat", ["s"])}, MemoryKeyLedger(clock), clock, None)


async def test_spend_carried_into_this_month_is_counted_and_named() -> None:
    with pytest.raises(Refused) as refused:
        await limits(IMPORTED + 3600).hold(config_terms(KEY), "l", None, SpentBefore(1.5, IMPORTED))
    assert refused.value.status == 429
    message = str(refused.value)
    assert "(1 USD per UTC month)" in message and "$1.500000 spent" in message


async def test_spend_carried_counts_no_more_once_its_period_ended() -> None:
    next_month = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    await limits(next_month).hold(config_terms(KEY), "l", None, SpentBefore(1.5, IMPORTED))


async def test_a_spend_within_the_budget_leaves_the_rest() -> None:
    await limits(IMPORTED + 60).hold(config_terms(KEY), "l", None, SpentBefore(0.5, IMPORTED))


def test_spend_counts_in_the_day_and_month_it_was_carried_into() -> None:
    carried = SpentBefore(2.0, IMPORTED)
    assert carried.counted(IMPORTED + 3600) == (2.0, 2.0)
    assert carried.counted(IMPORTED + 86_400) == (0.0, 2.0)
    assert SpentBefore(0.0, IMPORTED).counted(IMPORTED) == (0.0, 0.0)


async def test_a_teams_spend_carried_counts_against_the_teams_budget_not_the_keys() -> None:
    team = BudgetCap(team_owner("ml"), "week", 2.0)
    own = BudgetCap(key_owner("imported"), "month", 10.0)
    terms = KeyTerms(
        name="imported",
        budgets=(own, team),
        team="ml",
        allow_unpriced=True,
        team_spent=SpentBefore(2.5, IMPORTED),
    )
    with pytest.raises(Refused) as refused:
        await limits(IMPORTED + 60).hold(terms, "l", None)
    assert refused.value.code == "team_weekly_budget_exceeded"
    assert "$2.500000 spent" in str(refused.value)
    next_week = IMPORTED + 7 * 86_400
    await limits(next_week).hold(terms, "l", None)
