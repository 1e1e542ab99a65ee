"""Health scores from outcome logs, and the tiers they fall in."""

import pytest

from laneway.core.outcomes import Mark
from laneway.policy.health import HealthPolicy, Tier
from laneway.policy.outcome import summary_of
from tests.policy.marks import failures, log

POLICY = HealthPolicy(half_life=10.0)


def score(marks: tuple[Mark, ...], now: float) -> float:
    return POLICY.score(summary_of(marks, POLICY.half_life), now)


def test_no_history_is_fully_credible() -> None:
    assert score((), 0.0) == 1.0


@pytest.mark.parametrize(
    ("count", "tier"), [(1, Tier.CREDIBLE), (2, Tier.DEMOTED), (4, Tier.NON_CREDIBLE)]
)
def test_recent_failures_lower_the_tier(count: int, tier: Tier) -> None:
    marks = failures(*([100.0] * count))
    assert POLICY.tier(score(marks, 100.0)) is tier


def test_old_failures_fade() -> None:
    marks = failures(0.0, 0.0, 0.0, 0.0)
    assert score(marks, 0.0) == pytest.approx(0.2)
    assert score(marks, 10.0) == pytest.approx(1 / 3)
    assert score(marks, 100.0) > 0.99


def test_successes_count_for_the_score_and_throttles_against() -> None:
    assert score(log((0.0, "ok"), (0.0, "throttled")), 0.0) == pytest.approx(2 / 3)
