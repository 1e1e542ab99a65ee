"""Recorded calls replayed through the real call loop, and the candidates scored on them."""

from __future__ import annotations

from typing import Any

import pytest

from laneway.config.models import ChatLaneConfig, LaneConfig
from laneway.sizing.candidates import (
    CandidateSettings,
    Goal,
    candidates,
    nice_ceiling,
    recommend,
    score,
)
from laneway.sizing.replay import replay
from laneway.sizing.samples import (
    Distribution,
    RecordedAttempt,
    RecordedCall,
    percentile,
    profiles,
    recorded_calls,
)
from laneway.telemetry import CallSample

SOURCE = "openai:m"


def lane(**fields: Any) -> LaneConfig:
    body = {"sources": [{"base_url": "http://127.0.0.1:9/v1", "model": "m"}], **fields}
    return ChatLaneConfig.model_validate(body)


def ok(seconds: float) -> RecordedAttempt:
    return RecordedAttempt(SOURCE, "ok", seconds)


def failed(outcome: str, seconds: float = 0.01) -> RecordedAttempt:
    status = int(outcome) if outcome.isdigit() else None
    return RecordedAttempt(SOURCE, outcome, seconds, status)


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100
    dist = Distribution.of(values)
    assert dist is not None and (dist.p90, dist.max, dist.count) == (90, 100, 100)
    assert Distribution.of([]) is None


@pytest.mark.parametrize(
    ("seconds", "expected"), [(0.02, 0.1), (0.3, 0.4), (1.95, 2.0), (3.0, 3.5), (12.2, 13.0)]
)
def test_timeouts_round_up_strictly_above(seconds: float, expected: float) -> None:
    assert nice_ceiling(seconds) == expected


def test_embed_calls_split_into_one_script_per_batch() -> None:
    attempts = [
        {"source": SOURCE, "outcome": "503", "elapsed_ms": 10.0, "status": 503},
        {"source": SOURCE, "outcome": "ok", "elapsed_ms": 200.0},
        {"source": SOURCE, "outcome": "ok", "elapsed_ms": 250.0},
    ]
    sample = CallSample(0.0, "embed", False, "ok", 460.0, tuple(attempts))
    calls = recorded_calls([sample])
    assert [len(c.attempts) for c in calls] == [2, 1]
    assert calls[0].rescued and not calls[1].rescued
    profile = profiles(calls)[0]
    assert profile.failures == {"503": 1}
    assert profile.latency is not None and profile.latency.count == 2


def test_a_retry_rescues_a_recorded_failure_only_when_the_candidate_has_one() -> None:
    calls = [RecordedCall((failed("503"), ok(0.2)))]
    retried = lane(retries=1, retry_on=[503], backoff={"base": "100ms"}, deadline="5s")
    [with_retry] = replay("l", retried, calls)
    assert with_retry.answered and with_retry.requests == 2
    assert with_retry.wall == pytest.approx(0.01 + 0.1 + 0.2)
    [without] = replay("l", lane(deadline="5s"), calls)
    assert not without.answered and without.requests == 1


def test_a_timeout_cuts_a_slow_answer_and_the_deadline_bounds_the_wall() -> None:
    calls = [RecordedCall((ok(3.0),))]
    config = lane(
        attempt_timeout="1s",
        retries=3,
        retry_on=["timeout"],
        backoff={"base": "0ms"},
        deadline="2.5s",
    )
    [result] = replay("l", config, calls)
    assert not result.answered
    assert result.wall == pytest.approx(2.5)
    assert result.requests == 3


def test_censored_timeouts_never_answer_in_a_replay() -> None:
    calls = [RecordedCall((failed("timeout", 8.0), ok(0.5)))]
    config = lane(attempt_timeout="20s", retries=1, retry_on=["timeout"], deadline="60s")
    [result] = replay("l", config, calls)
    assert result.answered and result.wall == pytest.approx(20 + 1 + 0.5)


def test_a_stream_is_bounded_by_first_byte_timeout() -> None:
    calls = [RecordedCall((ok(2.0),), stream=True)]
    config = lane(first_byte_timeout="1s", retries=1, retry_on=["timeout"], deadline="10s")
    [result] = replay("l", config, calls)
    assert not result.answered and result.requests == 2


def test_the_pick_rescues_failures_without_cutting_the_tail() -> None:
    calls = [RecordedCall((ok(0.05),))] * 90 + [RecordedCall((ok(0.6),))] * 5
    calls += [RecordedCall((failed("503"), ok(0.05)))] * 5
    config = lane(attempt_timeout="5s", retries=0, retry_on=[503, "timeout"], deadline="10s")
    goal = Goal(client_deadline=3.0, margin=0.5)
    scores = [score("l", config, calls, s, goal) for s in candidates(config, calls, goal)]
    picked = recommend(scores, goal)
    assert picked is not None
    best, reason = picked
    assert best.answered == 1.0
    assert best.settings.retries >= 1
    assert best.settings.attempt_timeout > 0.6
    assert best.worst_case <= 2.5
    assert "client_deadline 3s" in reason


def test_nothing_fits_a_caller_faster_than_the_upstream() -> None:
    calls = [RecordedCall((ok(2.0),))] * 10
    config = lane(deadline="10s")
    goal = Goal(client_deadline=1.0, margin=0.2)
    scores = [score("l", config, calls, s, goal) for s in candidates(config, calls, goal)]
    assert recommend(scores, goal) is None


def test_settings_apply_only_their_fields() -> None:
    config = lane(deadline="9s", retries=1, retry_on=[503])
    applied = CandidateSettings("x", 2.0, 3, 7.0, 1.5).apply(config)
    assert (applied.attempt_timeout, applied.retries, applied.deadline) == (2.0, 3, 7.0)
    assert isinstance(applied, ChatLaneConfig) and applied.first_byte_timeout == 1.5
    assert applied.retry_on == config.retry_on


def test_streams_get_a_first_byte_timeout_of_their_own() -> None:
    plain = [RecordedCall((ok(2.0),))] * 20
    streamed = [RecordedCall((ok(0.3),), stream=True)] * 20
    config = lane(deadline="20s")
    settings = candidates(config, plain + streamed, Goal(None, 1.0), percentiles=[99])
    assert [(s.attempt_timeout, s.first_byte_timeout) for s in settings[1:2]] == [(2.5, 0.4)]


def test_a_candidates_deadline_is_its_attempts_and_backoffs() -> None:
    """Failed before: every candidate with a retry got the caller's whole 29 s, its worst case
    counting a 30 s Retry-After wait for each retry."""
    config = lane(attempt_timeout="8s", retries=2, retry_on=[503], backoff={"base": "1s"})
    calls = [RecordedCall((ok(1.2),))] * 20 + [RecordedCall((ok(6.5),))]
    goal = Goal(client_deadline=30.0, margin=1.0)
    by_shape = {(c.attempt_timeout, c.retries): c for c in candidates(config, calls, goal)}
    assert by_shape[(7.0, 1)].deadline == nice_ceiling(7 * 2 + 1)
    assert by_shape[(7.0, 3)].deadline == 29.0, "still capped by the caller's deadline less margin"
