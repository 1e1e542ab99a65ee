"""RetryPolicy decisions, as a table of (failure, state) -> decision. No clock, no loop."""

import random

import pytest

from laneway.core.errors import AttemptFailure
from laneway.policy.backoff import Backoff
from laneway.policy.retry import GiveUp, Pushback, Retry, RetryPolicy

RNG = random.Random(0)


def status(code: int, retry_after: float | None = None) -> AttemptFailure:
    return AttemptFailure("status", f"{code}", status=code, retry_after=retry_after)


def decide(policy: RetryPolicy, failure: AttemptFailure, *, retries=0, pushbacks=0, remaining=60.0):
    return policy.decide(
        failure, retries_used=retries, pushbacks_used=pushbacks, remaining=remaining, rng=RNG
    )


POLICY = RetryPolicy(retries=2, retry_on=frozenset({"503", "timeout"}), backoff=Backoff(base=1.0))


def test_no_declared_retries_means_one_attempt() -> None:
    assert isinstance(decide(RetryPolicy(), status(503)), GiveUp)


def test_listed_status_is_retried_after_backoff() -> None:
    assert decide(POLICY, status(503)) == Retry(1.0)


def test_unlisted_status_is_not_retried() -> None:
    verdict = decide(POLICY, status(500))
    assert isinstance(verdict, GiveUp)
    assert "500 is not in retry_on" in verdict.reason


def test_classes_beside_status_codes() -> None:
    assert decide(POLICY, AttemptFailure("timeout", "t")) == Retry(1.0)
    assert isinstance(decide(POLICY, AttemptFailure("connect", "c")), GiveUp)


def test_retries_are_counted() -> None:
    assert isinstance(decide(POLICY, status(503), retries=2), GiveUp)


def test_rejections_are_never_retried() -> None:
    policy = RetryPolicy(retries=3, retry_on=frozenset({"400", "rejected"}))
    assert isinstance(decide(policy, AttemptFailure("rejected", "x", status=400)), GiveUp)


def test_no_doomed_attempt_when_backoff_eats_the_time_left() -> None:
    verdict = decide(POLICY, status(503), remaining=1.1)
    assert isinstance(verdict, GiveUp)
    assert "no time left" in verdict.reason


def test_retry_after_is_pushback_not_a_retry() -> None:
    assert decide(POLICY, status(429, retry_after=2.0)) == Pushback(2.0)
    assert decide(RetryPolicy(), status(503, retry_after=2.0)) == Pushback(2.0)


def test_pushback_count_is_bounded_then_falls_back_to_retry_rules() -> None:
    policy = RetryPolicy(max_pushbacks=1, retries=1, retry_on=frozenset({"429"}))
    assert decide(policy, status(429, 0.5), pushbacks=1) == Retry(1.0)
    assert isinstance(decide(RetryPolicy(max_pushbacks=1), status(429, 0.5), pushbacks=1), GiveUp)


def test_pushback_over_the_cap_or_past_the_deadline_fails_at_once() -> None:
    capped = decide(RetryPolicy(max_pushback_wait=5.0), status(429, retry_after=6.0))
    assert isinstance(capped, GiveUp) and capped.pushback
    late = decide(RetryPolicy(), status(429, retry_after=3.0), remaining=3.1)
    assert isinstance(late, GiveUp) and late.pushback
    assert "before the deadline" in late.reason


def test_retry_after_on_other_statuses_is_not_pushback() -> None:
    assert isinstance(decide(RetryPolicy(), status(500, retry_after=1.0)), GiveUp)


@pytest.mark.parametrize(
    ("backoff", "ceilings"),
    [
        (Backoff("constant", base=1.0), [1.0, 1.0, 1.0]),
        (Backoff("exponential", base=0.5, cap=1.5), [0.5, 1.0, 1.5]),
    ],
)
def test_backoff_schedule(backoff: Backoff, ceilings: list[float]) -> None:
    assert [backoff.ceiling(n) for n in (1, 2, 3)] == ceilings


@pytest.mark.parametrize(("jitter", "low"), [("full", 0.0), ("equal", 2.0)])
def test_jitter_stays_within_its_band(jitter, low) -> None:
    backoff = Backoff("exponential", base=1.0, cap=4.0, jitter=jitter)
    rng = random.Random(7)
    draws = [backoff.delay(3, rng) for _ in range(200)]
    assert all(low <= d <= 4.0 for d in draws)
    assert len(set(draws)) > 100


def test_worst_case_is_capped_by_the_deadline() -> None:
    policy = RetryPolicy(retries=2, retry_on=frozenset({"503"}), backoff=Backoff(base=1.0))
    assert policy.worst_case(8.0, 28.0) == 26.0
    assert policy.worst_case(10.0, 28.0) == 28.0
