"""Budget rules: the calendar periods a budget counts over, and what a budget allows.

A budget caps the USD a key (or a team, for its keys together) may spend in
a period: a UTC day, an ISO week (Monday 00:00 UTC to the next), a UTC month,
or ``total`` (never resets). Spend is counted per period *instance*, named
by ``period_name`` (``2026-12-03``, ``2026-W49``, ``2026-12``, ``total``), so
a new period starts from zero with no reset job. A call reserves its
estimated cost before it is made; it is refused when the spend counted so far
plus that estimate would pass a cap.

Pure: times are wall-clock seconds passed in (replicas share that timeline,
and budget periods are calendar periods), never read here. The key ledgers
(``laneway.state.keys``) apply these rules in memory and, step for step, in
their Redis scripts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

PERIODS = ("day", "week", "month", "total")
"""Budget periods, shortest first."""

SECONDS_A_DAY = 86_400
"""Every UTC day is this long in Unix time (which has no leap seconds)."""


@dataclass(frozen=True, slots=True)
class BudgetCap:
    """A cap of ``usd`` over ``period`` for ``owner`` (a key's or a team's name)."""

    owner: str
    period: str
    usd: float


@dataclass(frozen=True, slots=True)
class OverBudget:
    """The budget a call would pass, what was spent in its period, and when the period ends."""

    budget: BudgetCap
    spent: float
    seconds: float
    """Seconds until the period ends and the budget allows calls again (``inf``: never)."""


def period_name(period: str, wall: float) -> str:
    """The name of the ``period`` instance wall time ``wall`` falls in."""
    if period == "total":
        return "total"
    day, week, month = _names(int(wall // SECONDS_A_DAY))
    if period == "day":
        return day
    if period == "week":
        return week
    if period == "month":
        return month
    raise ValueError(f"unknown budget period {period!r} (one of {', '.join(PERIODS)})")


def periods(wall: float) -> tuple[str, str]:
    """The UTC day (``2026-12-01``) and month (``2026-12``) a wall time falls in."""
    day, _, month = _names(int(wall // SECONDS_A_DAY))
    return day, month


@lru_cache(maxsize=4)
def _names(day_number: int) -> tuple[str, str, str]:
    """Day, ISO week and month names of the ``day_number``-th day since the epoch.

    Formatted once per day: every keyed call asks, and formatting a datetime
    each time was 1% of a request's CPU.
    """
    date = datetime.fromtimestamp(day_number * SECONDS_A_DAY, UTC)
    year, week, _ = date.isocalendar()
    day = date.strftime("%Y-%m-%d")
    return day, f"{year}-W{week:02d}", day[:7]


def period_left(period: str, wall: float) -> float:
    """Seconds from ``wall`` to the end of its ``period`` instance (``inf`` for ``total``)."""
    if period == "total":
        return math.inf
    now = datetime.fromtimestamp(wall, UTC)
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if period == "day":
        end = midnight + timedelta(days=1)
    elif period == "week":
        end = midnight + timedelta(days=7 - now.weekday())
    elif period == "month":
        year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
        end = datetime(year, month, 1, tzinfo=UTC)
    else:
        raise ValueError(f"unknown budget period {period!r} (one of {', '.join(PERIODS)})")
    return end.timestamp() - wall


def period_resets(wall: float) -> tuple[float, float]:
    """Seconds from ``wall`` to the next UTC midnight and to the next month's first day."""
    return period_left("day", wall), period_left("month", wall)


def over_budget(
    budgets: Sequence[BudgetCap], spent: Sequence[float], usd: float, wall: float
) -> OverBudget | None:
    """The first of ``budgets`` a call estimated at ``usd`` would pass, if any.

    ``spent[i]`` is what ``budgets[i]``'s current period counts so far
    (reservations of calls still running included). A call that fits exactly
    is allowed: the cap is the most that may be spent.
    """
    for budget, already in zip(budgets, spent, strict=True):
        if already + usd > budget.usd:
            return OverBudget(budget, already, period_left(budget.period, wall))
    return None


def reached(thresholds: Sequence[float], spent: float, budget: BudgetCap) -> tuple[float, ...]:
    """The ``thresholds`` (fractions of the budget, ascending) ``spent`` has reached."""
    return tuple(t for t in thresholds if spent >= t * budget.usd)
