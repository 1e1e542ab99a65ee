"""Budget rules on a fake clock: period names, when each period ends, what a budget allows."""

import math
from datetime import UTC, datetime

import pytest

from laneway.core.clock import FakeClock
from laneway.policy.budget import (
    BudgetCap,
    OverBudget,
    over_budget,
    period_left,
    period_name,
    period_resets,
    periods,
    reached,
)

HOUR = 3600.0


def _at(text: str) -> FakeClock:
    """A fake clock whose wall time is ``text`` (UTC)."""
    return FakeClock(wall_start=datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def test_each_period_names_the_instance_a_wall_time_falls_in() -> None:
    clock = _at("2026-12-03T12:00:00")  # a Thursday, ISO week 49
    names = {p: period_name(p, clock.wall()) for p in ("day", "week", "month", "total")}
    assert names == {"day": "2026-12-03", "week": "2026-W49", "month": "2026-12", "total": "total"}
    assert periods(clock.wall()) == ("2026-12-03", "2026-12")


def test_the_iso_week_crosses_the_new_year_whole() -> None:
    """1 January 2027 is a Friday: it belongs to 2026's week 53, which ends on Monday the 4th."""
    clock = _at("2027-01-01T06:00:00")
    assert period_name("week", clock.wall()) == "2026-W53"
    assert period_left("week", clock.wall()) == 3 * 24 * HOUR - 6 * HOUR
    clock.advance(period_left("week", clock.wall()))
    assert period_name("week", clock.wall()) == "2027-W01"


def test_a_period_ends_at_its_calendar_boundary() -> None:
    clock = _at("2026-12-31T23:00:00")  # a Thursday
    wall = clock.wall()
    assert period_left("day", wall) == HOUR
    assert period_left("week", wall) == HOUR + 3 * 24 * HOUR  # Monday 4 January, 00:00
    assert period_left("month", wall) == HOUR
    assert period_left("total", wall) == math.inf
    assert period_resets(wall) == (HOUR, HOUR)
    clock.advance(HOUR)
    assert periods(clock.wall()) == ("2027-01-01", "2027-01")


def test_a_new_period_is_a_new_name_so_spend_starts_from_zero() -> None:
    clock = _at("2026-12-03T23:59:59")
    before = period_name("day", clock.wall())
    clock.advance(1.0)
    assert period_name("day", clock.wall()) != before
    assert period_name("total", clock.wall()) == "total"


def test_an_unknown_period_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="fortnight"):
        period_name("fortnight", 0.0)
    with pytest.raises(ValueError, match="fortnight"):
        period_left("fortnight", 0.0)


def test_a_call_that_fits_exactly_is_allowed_and_a_cent_more_is_not() -> None:
    wall = _at("2026-12-03T12:00:00").wall()
    budget = BudgetCap("team-a", "week", 10.0)
    assert over_budget([budget], [9.0], 1.0, wall) is None
    over = over_budget([budget], [9.01], 1.0, wall)
    assert over == OverBudget(budget, 9.01, period_left("week", wall))


def test_the_first_budget_passed_is_named() -> None:
    wall = _at("2026-12-03T12:00:00").wall()
    key_day = BudgetCap("key-a", "day", 5.0)
    team_total = BudgetCap("team-a", "total", 100.0)
    over = over_budget([key_day, team_total], [1.0, 99.5], 1.0, wall)
    assert over is not None and over.budget == team_total and over.seconds == math.inf
    assert over_budget([key_day, team_total], [4.5, 99.5], 1.0, wall) == OverBudget(
        key_day, 4.5, 12 * HOUR
    )
    assert over_budget([], [], 1e9, wall) is None


def test_the_thresholds_a_spend_reached() -> None:
    budget = BudgetCap("key:a", "month", 10.0)
    thresholds = (0.5, 0.8, 1.0)
    assert reached(thresholds, 4.99, budget) == ()
    assert reached(thresholds, 5.0, budget) == (0.5,)
    assert reached(thresholds, 9.0, budget) == (0.5, 0.8)
    assert reached(thresholds, 12.0, budget) == thresholds
