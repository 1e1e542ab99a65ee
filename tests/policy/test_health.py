"""Health scores from outcome logs, and the tiers they fall in."""

import pytest

from laneway.policy.health import HealthPolicy, Tier
from tests.policy.marks import failures, log

POLICY = HealthPolicy(half_life=10.0)


def test_no_history_is_fully_credible() -> None:
    assert POLICY.score((), 0.0) == 1.0


@pytest.mark.parametrize(
    ("count", "tier"), [(1, Tier.CREDIBLE), (2, Tier.DEMOTED), (4, Tier.NON_CREDIBLE)]
)
def test_recent_failures_lower_the_tier(count: int, tier: Tier) -> None:
    marks = failures(*([100.0] * count))
    assert POLICY.tier(POLICY.score(marks, 100.0)) is tier


def test_old_failures_fade() -> None:
    marks = failures(0.0, 0.0, 0.0, 0.0)
    assert POLICY.score(marks, 0.0) == pytest.approx(0.2)
    assert POLICY.score(marks, 10.0) == pytest.approx(1 / 3)
    assert POLICY.score(marks, 100.0) > 0.99


def test_successes_count_for_the_score_and_throttles_against() -> None:
    assert POLICY.score(log((0.0, "ok"), (0.0, "throttled")), 0.0) == pytest.approx(2 / 3)
