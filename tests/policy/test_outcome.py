"""How attempt failures count for health, the breaker and pacing."""

from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.policy.outcome import Verdict, _summary, judge, summarize
from laneway.state.base import Mark


@pytest.mark.parametrize(
    ("failure", "verdict"),
    [
        (None, Verdict.OK),
        (AttemptFailure(FailureKind.STATUS, "503", status=503), Verdict.FAILED),
        (AttemptFailure(FailureKind.STATUS, "429", status=429), Verdict.THROTTLED),
        (AttemptFailure(FailureKind.TIMEOUT, "slow"), Verdict.TIMED_OUT),
        (AttemptFailure(FailureKind.CONNECT, "refused"), Verdict.FAILED),
        (AttemptFailure(FailureKind.MALFORMED, "html"), Verdict.FAILED),
        (AttemptFailure(FailureKind.REJECTED, "400", status=400), Verdict.NEUTRAL),
        (AttemptFailure(FailureKind.CONTEXT_LENGTH, "long", status=400), Verdict.NEUTRAL),
        (AttemptFailure(FailureKind.DIMENSION, "768 != 1024"), Verdict.NEUTRAL),
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


CODES = ("ok", "failed", "timeout", "throttled")


@given(
    st.lists(st.tuples(st.floats(0.0, 30.0), st.sampled_from(CODES)), min_size=1, max_size=90),
    st.integers(1, 8),
)
def test_a_summary_derived_mark_by_mark_equals_one_made_from_the_whole_log(
    steps: list[tuple[float, str]], size: int
) -> None:
    """What a settle does to a store's log: append one later mark, drop the oldest when full."""
    window: deque[Mark] = deque(maxlen=size)
    at = 0.0
    for gap, code in steps:
        at += gap
        window.append(Mark(at, code))
        marks = tuple(window)
        derived = summarize(marks, 60.0)
        whole = _summary(marks, 60.0)
        assert derived.failures == whole.failures
        assert derived.last_failure == whole.last_failure
        assert derived.newest == whole.newest
        assert derived.weight == pytest.approx(whole.weight, abs=1e-9)
        assert derived.good == pytest.approx(whole.good, abs=1e-9)


def test_consecutive_logs_are_summarised_from_the_previous_summary() -> None:
    first = (Mark(1.0, "ok"), Mark(2.0, "failed"))
    second = (*first, Mark(3.0, "failed"))
    assert summarize(first, 60.0).steps == 0
    assert summarize(second, 60.0).steps == 1
    assert summarize(second, 60.0).failures == (2.0, 3.0)


def test_a_log_out_of_time_order_is_summarised_whole() -> None:
    shuffled = (Mark(5.0, "failed"), Mark(1.0, "ok"))
    grown = (*shuffled, Mark(6.0, "failed"))
    summarize(shuffled, 60.0)
    assert summarize(grown, 60.0).failures == (5.0, 6.0)
    assert summarize((*grown[1:], Mark(7.0, "ok")), 60.0).steps == 0
