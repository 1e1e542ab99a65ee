"""How attempt failures count for health, the breaker and pacing."""

import pytest

from laneway.core.errors import AttemptFailure
from laneway.policy.outcome import Verdict, judge


@pytest.mark.parametrize(
    ("failure", "verdict"),
    [
        (None, Verdict.OK),
        (AttemptFailure("status", "503", status=503), Verdict.FAILED),
        (AttemptFailure("status", "429", status=429), Verdict.THROTTLED),
        (AttemptFailure("timeout", "slow"), Verdict.TIMED_OUT),
        (AttemptFailure("connect", "refused"), Verdict.FAILED),
        (AttemptFailure("malformed", "html"), Verdict.FAILED),
        (AttemptFailure("rejected", "400", status=400), Verdict.NEUTRAL),
        (AttemptFailure("context_length", "long", status=400), Verdict.NEUTRAL),
        (AttemptFailure("dimension", "768 != 1024"), Verdict.NEUTRAL),
    ],
)
def test_judge(failure: AttemptFailure | None, verdict: Verdict) -> None:
    assert judge(failure) is verdict


def test_rejections_say_nothing_about_health() -> None:
    assert Verdict.NEUTRAL.health_sample is None
    assert not Verdict.NEUTRAL.opens_breaker
    assert not Verdict.NEUTRAL.logged


def test_throttling_lowers_health_and_cuts_pacing_but_never_opens_the_breaker() -> None:
    assert Verdict.THROTTLED.health_sample == 0.0
    assert Verdict.THROTTLED.overloads
    assert not Verdict.THROTTLED.opens_breaker
    assert Verdict.TIMED_OUT.overloads and Verdict.TIMED_OUT.opens_breaker
