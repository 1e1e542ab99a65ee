"""``History``: per-lane and per-source buckets of the last hour, bounded, mergeable."""

from __future__ import annotations

import orjson
import pytest

from laneway.core.records import CallRecord
from laneway.core.types import Attempt, Usage
from laneway.metrics.history import (
    BUCKET_SECONDS,
    KEPT_MINUTES,
    LANE,
    LATENCY_RATIO,
    SLOTS_PER_MINUTE,
    History,
    binned_quantile,
)

T0 = 1_800_000_000.0
"""A minute's start."""
SLOT = int(T0 // BUCKET_SECONDS)
MINUTE = SLOT // SLOTS_PER_MINUTE


def record(
    at: float = T0,
    *,
    latency: float = 0.5,
    attempts: tuple[Attempt, ...] = (Attempt("a", "ok", 0.5),),
    source: str | None = "a",
    error: str | None = None,
    usage: Usage | None = None,
    ttfb: float | None = None,
) -> CallRecord:
    return CallRecord(
        time=at - latency,
        lane="l",
        kind="chat",
        outcome="error" if error else "ok",
        latency=latency,
        attempts=attempts,
        source=source,
        error=error,
        usage=usage or Usage(10, 20, 30, source="provider"),
        ttfb=ttfb,
    )


def test_a_call_counts_for_its_lane_and_each_source_it_tried() -> None:
    history = History()
    tried = (
        Attempt("a", "503", 0.1, status=503),
        Attempt("a", "429", 0.05, status=429, pushback=True),
        Attempt("b", "ok", 0.3),
    )
    history.observe(record(attempts=tried, source="b", ttfb=0.2), 0.01)
    history.observe(
        record(
            attempts=(Attempt("a", "timeout", 2.0),),
            source=None,
            error="upstream_timeout",
            latency=2.0,
        ),
        None,
    )
    lane = history.span("l", LANE, SLOT, SLOT)
    assert (lane.requests, lane.errors, lane.pushbacks) == (2, 1, 1)
    assert lane.error_codes == {"upstream_timeout": 1}
    assert (lane.prompt_tokens, lane.completion_tokens, lane.cost) == (20, 40, 0.01)
    a = history.span("l", "a", SLOT, SLOT)
    assert (a.requests, a.errors, a.pushbacks) == (3, 3, 1)
    assert a.error_codes == {"503": 1, "429": 1, "timeout": 1}
    assert (a.completion_tokens, a.cost, sum(a.ttft.values())) == (0, 0.0, 0)
    b = history.span("l", "b", SLOT, SLOT)
    assert (b.requests, b.errors, b.completion_tokens, b.cost) == (1, 0, 20, 0.01)
    assert binned_quantile(b.ttft, 0.5) == pytest.approx(0.2, rel=LATENCY_RATIO - 1)


def test_percentiles_are_within_one_bin() -> None:
    history = History()
    for n in range(1, 101):
        history.observe(record(latency=n / 100, attempts=()), None)
    lane = history.span("l", LANE, SLOT, SLOT)
    assert binned_quantile(lane.latency, 0.5) == pytest.approx(0.5, rel=LATENCY_RATIO - 1)
    assert binned_quantile(lane.latency, 0.99) == pytest.approx(0.99, rel=LATENCY_RATIO - 1)
    assert binned_quantile({}, 0.5) is None


def test_spans_and_points_cover_the_slots_asked_for() -> None:
    history = History()
    for minute in range(10):
        for n in range(minute):
            history.observe(record(T0 + 60 * minute + 5 * n, attempts=()), None)
    last = SLOT + SLOTS_PER_MINUTE * 10 - 1
    points = history.points("l", LANE, MINUTE + 9, 10)
    assert [p.requests for p in points] == list(range(10))
    assert [p.requests for p in history.points("l", LANE, MINUTE + 11, 3)] == [9, 0, 0]
    assert history.span("l", LANE, last - 5, last).requests == 9
    assert history.span("l", "nobody", SLOT, last).requests == 0


def test_older_buckets_fold_into_minutes_and_memory_stays_bounded() -> None:
    history = History()
    for n in range(SLOTS_PER_MINUTE * (KEPT_MINUTES + 30)):
        history.observe(record(T0 + n * BUCKET_SECONDS), None)
    series = history.series["l", LANE]
    assert len(series.recent) <= SLOTS_PER_MINUTE
    assert len(series.minutes) == KEPT_MINUTES
    assert all(b.requests == SLOTS_PER_MINUTE for b in list(series.minutes)[:-1])
    last_minute = MINUTE + KEPT_MINUTES + 29
    points = history.points("l", LANE, last_minute, 60)
    assert [p.requests for p in points] == [SLOTS_PER_MINUTE] * 60


def test_a_late_record_counts_in_the_newest_bucket() -> None:
    history = History()
    history.observe(record(T0 + 30), None)
    history.observe(record(T0), None)
    [bucket] = history.series["l", LANE].recent
    assert bucket.requests == 2 and bucket.slot == SLOT + 3


def test_workers_histories_add_up_through_json() -> None:
    mine, theirs = History(), History()
    mine.observe(record(T0), 0.5)
    theirs.observe(record(T0 - 120, error="upstream_error", source=None), None)
    theirs.observe(record(T0 + 20), 0.25)
    shipped = orjson.loads(orjson.dumps(theirs.dump()))
    merged = mine.merged([shipped])
    points = merged.points("l", LANE, MINUTE, 3)
    assert [p.requests for p in points] == [1, 0, 2]
    assert (points[0].errors, points[2].cost) == (1, 0.75)
    assert merged.span("l", LANE, SLOT, SLOT + 2).requests == 2
    assert sum(points[2].latency.values()) == 2
    assert mine.points("l", LANE, MINUTE, 3)[2].requests == 1, "merging leaves mine as it was"
    assert merged.names() == {("l", LANE), ("l", "a")}


def test_a_dump_serialises_a_closed_minute_once() -> None:
    history = History()
    for n in range(SLOTS_PER_MINUTE * 3):
        history.observe(record(T0 + n * BUCKET_SECONDS), None)
    series = history.series["l", LANE]
    first = series.dump()
    again = series.dump()
    assert first[0][0] is again[0][0] and isinstance(first[0][0], orjson.Fragment)
    assert orjson.loads(orjson.dumps(first)) == orjson.loads(orjson.dumps(again))
