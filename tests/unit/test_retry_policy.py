"""RetryPolicy decisions, as a table of (failure, state) -> decision. No clock, no loop."""

import random

import pytest

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.policy.backoff import Backoff
from laneway.policy.retry import GiveUp, Pushback, Retry, RetryPolicy

RNG = random.Random(0)


def status(code: int, retry_after: float | None = None) -> AttemptFailure:
    return AttemptFailure(FailureKind.STATUS, f"{code}", status=code, retry_after=retry_after)


def decide(
    policy: RetryPolicy,
    failure: AttemptFailure,
    *,
    retries=0,
    class_used=0,
    pushbacks=0,
    remaining=60.0,
):
    return policy.decide(
        failure,
        retries_used=retries,
        class_used=class_used,
        pushbacks_used=pushbacks,
        remaining=remaining,
        rng=RNG,
    )


def listed(*labels: str, retries: int = 2) -> dict[str, int]:
    return dict.fromkeys(labels, retries)


POLICY = RetryPolicy(retries=2, retry_on=listed("503", "timeout"), backoff=Backoff(base=1.0))


def test_no_declared_retries_means_one_attempt() -> None:
    assert isinstance(decide(RetryPolicy(), status(503)), GiveUp)


@pytest.mark.parametrize("code", [429, 503])
def test_undeclared_lane_gives_up_even_when_asked_to_wait(code: int) -> None:
    """Pushback is opt-in: a Retry-After alone never buys a second request."""
    verdict = decide(RetryPolicy(), status(code, retry_after=1.0))
    assert isinstance(verdict, GiveUp) and not verdict.pushback


def test_listed_status_is_retried_after_backoff() -> None:
    assert decide(POLICY, status(503)) == Retry(1.0)


def test_unlisted_status_is_not_retried() -> None:
    verdict = decide(POLICY, status(500))
    assert isinstance(verdict, GiveUp)
    assert "500 is not in retry_on" in verdict.reason


@pytest.mark.parametrize("kind", [FailureKind.DIMENSION, FailureKind.MALFORMED])
def test_a_kind_retry_on_cannot_name_is_never_retried_and_not_sent_to_retry_on(
    kind: FailureKind,
) -> None:
    """'dimension is not in retry_on' read as advice to list it there (issue 23, defect 9)."""
    verdict = decide(POLICY, AttemptFailure(kind, "k"))
    assert isinstance(verdict, GiveUp)
    assert verdict.reason == f"{kind} is never retried: the same request would fail alike"


def test_classes_beside_status_codes() -> None:
    assert decide(POLICY, AttemptFailure(FailureKind.TIMEOUT, "t")) == Retry(1.0)
    assert isinstance(decide(POLICY, AttemptFailure(FailureKind.CONNECT, "c")), GiveUp)


def test_retries_are_counted() -> None:
    assert isinstance(decide(POLICY, status(503), retries=2), GiveUp)


def test_each_class_spends_its_own_count_within_retries() -> None:
    policy = RetryPolicy(retries=3, retry_on={"503": 2, "timeout": 1}, per_class=True)
    assert decide(policy, status(503), retries=1, class_used=1) == Retry(1.0)
    spent = decide(policy, status(503), retries=2, class_used=2)
    assert isinstance(spent, GiveUp) and spent.reason == "retry_on gives 503 2 retries, spent"
    assert decide(policy, AttemptFailure(FailureKind.TIMEOUT, "t"), retries=2) == Retry(1.0)
    over = decide(policy, AttemptFailure(FailureKind.TIMEOUT, "t"), retries=3)
    assert isinstance(over, GiveUp) and over.reason == "all 3 retries spent"


def test_rejections_are_never_retried() -> None:
    policy = RetryPolicy(retries=3, retry_on=listed("400", "rejected"))
    assert isinstance(decide(policy, AttemptFailure(FailureKind.REJECTED, "x", status=400)), GiveUp)


def test_no_doomed_attempt_when_backoff_eats_the_time_left() -> None:
    """Another source may still take the call; alone, the call ends at once."""
    verdict = decide(POLICY, status(503), remaining=1.1)
    assert isinstance(verdict, Retry) and verdict.if_alone is not None
    assert "no time left" in verdict.if_alone.reason
    assert not verdict.if_alone.pushback


def test_nothing_left_for_any_source_gives_up() -> None:
    verdict = decide(POLICY, status(503), remaining=0.2)
    assert isinstance(verdict, GiveUp) and "no time left" in verdict.reason


def test_declared_retry_waits_at_least_the_retry_after() -> None:
    policy = RetryPolicy(retries=2, retry_on=listed("429", "500"), backoff=Backoff(base=0.5))
    assert decide(policy, status(429, retry_after=2.0)) == Retry(2.0)
    assert decide(policy, status(500, retry_after=0.1)) == Retry(0.5)


def test_pushback_is_opt_in_and_spends_no_retry() -> None:
    policy = RetryPolicy(max_pushbacks=1)
    assert decide(policy, status(429, retry_after=2.0)) == Pushback(2.0)
    assert decide(policy, status(503, retry_after=2.0)) == Pushback(2.0)


def test_pushback_count_is_bounded_then_falls_back_to_retry_rules() -> None:
    policy = RetryPolicy(max_pushbacks=1, retries=1, retry_on=listed("429", retries=1))
    assert decide(policy, status(429, 0.5), pushbacks=1) == Retry(1.0)
    assert isinstance(decide(RetryPolicy(max_pushbacks=1), status(429, 0.5), pushbacks=1), GiveUp)


@pytest.mark.parametrize("policy", [RetryPolicy(max_pushbacks=1), POLICY])
def test_retry_after_over_the_cap_or_past_the_deadline_refuses_the_source(policy) -> None:
    """The source cannot be waited for: another may take the call, or it fails at once."""
    capped = decide(
        RetryPolicy(max_pushbacks=1, max_pushback_wait=5.0), status(429, retry_after=6.0)
    )
    assert isinstance(capped, Pushback) and capped.if_alone is not None
    assert capped.if_alone.pushback and capped.if_alone.ready_in == 6.0
    assert "max_pushback_wait 5s" in capped.if_alone.reason
    late = decide(policy, status(503, retry_after=3.0), remaining=3.1)
    assert isinstance(late, Retry | Pushback) and late.if_alone is not None
    assert late.if_alone.pushback and "before the deadline" in late.if_alone.reason


def test_retry_after_on_other_statuses_is_not_pushback() -> None:
    assert isinstance(decide(RetryPolicy(max_pushbacks=2), status(500, retry_after=1.0)), GiveUp)


def test_most_requests_counts_retries_pushbacks_and_context_moves() -> None:
    assert RetryPolicy().most_requests() == 1
    assert POLICY.most_requests() == 3
    assert RetryPolicy(retries=5, retry_on={"503": 1, "timeout": 1}).most_requests() == 3
    assert RetryPolicy(retries=2, retry_on=listed("503"), max_pushbacks=2).most_requests() == 5
    assert POLICY.most_requests(context_moves=1) == 4


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


def test_worst_case_counts_retry_after_waits_and_is_capped_by_the_deadline() -> None:
    policy = RetryPolicy(
        retries=2, retry_on=listed("503"), backoff=Backoff(base=1.0), max_pushback_wait=0.5
    )
    assert policy.worst_case(8.0, 28.0) == 26.0
    assert policy.worst_case(10.0, 28.0) == 28.0
    assert RetryPolicy(retries=1, retry_on=listed("503")).worst_case(8.0, 60.0) == 46.0
