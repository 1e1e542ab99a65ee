"""The hedge policy on a virtual clock: delay, budget and the race's next step (issue 26)."""

from __future__ import annotations

import pytest

from laneway.core.clock import FakeClock
from laneway.policy.hedge import (
    FLOOR,
    HEDGE,
    HOLD_ON,
    MIN_SAMPLES,
    HedgeBudget,
    HedgeLimits,
    WaitUntil,
    step,
)


def test_a_fixed_after_is_the_delay() -> None:
    assert HedgeLimits(0.8, None, 0.1, 10.0).delay([5.0] * 100) == 0.8


def test_a_percentile_waits_for_its_samples_then_follows_them() -> None:
    limits = HedgeLimits(None, 0.95, 0.1, 10.0)
    assert limits.delay([0.1] * (MIN_SAMPLES - 1)) == limits.cap == 5.0
    times = [0.1] * 95 + [4.0] * 5
    assert limits.delay(times) == pytest.approx(0.11)
    assert HedgeLimits(None, 0.99, 0.1, 10.0).delay(times) == pytest.approx(4.4)
    assert limits.delay([0.001] * 100) == FLOOR
    assert limits.delay([9.0] * 100) == limits.cap


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="within the attempt timeout"):
        HedgeLimits(2.0, None, 0.1, 1.0)
    with pytest.raises(ValueError, match="max_share"):
        HedgeLimits(0.5, None, 1.5, 1.0)


def test_the_budget_is_one_hedge_plus_the_share_of_the_minute() -> None:
    clock = FakeClock()
    budget = HedgeBudget(0.1)
    for _ in range(20):
        budget.called(clock.now())
    taken = sum(budget.take(clock.now()) for _ in range(10))
    assert taken == 3
    clock.advance(61)
    budget.called(clock.now())
    assert budget.take(clock.now())
    budget.refund()
    assert budget.take(clock.now())
    assert not budget.take(clock.now())


def test_no_share_no_hedge() -> None:
    budget = HedgeBudget(0.0)
    budget.called(0.0)
    assert not budget.take(0.0)


def test_the_step_waits_then_hedges_once() -> None:
    assert step(10.0, 0.2, 10.1, hedged=False, hedgeable=True) == WaitUntil(10.2)
    assert step(10.0, 0.2, 10.2, hedged=False, hedgeable=True) is HEDGE
    assert step(10.0, 0.2, 10.3, hedged=True, hedgeable=True) is HOLD_ON
    assert step(10.0, 0.2, 10.3, hedged=False, hedgeable=False) is HOLD_ON
