"""The chaos figures from hand-made records: replay of sim statuses, windows, targets."""

from __future__ import annotations

import math

import pytest

from laneway.chaos.metrics import SeenCall, interpolated_percentile, max_in_window, tally_scenario
from laneway.chaos.scenarios import build, select
from laneway.chaos.targets import judge_scenario
from laneway.chaos.upstream import Hit, replay_hits


def test_replay_applies_the_rate_bucket_across_specs() -> None:
    a, b = "rpm=2,bucket=x,id=a", "rpm=2,bucket=x,id=b"
    log = {a: [0.0, 10.0, 60.0], b: [5.0, 61.0]}
    statuses = [(h.at, h.status) for h in replay_hits(log, [a, b])]
    assert statuses == [(0.0, 200), (5.0, 200), (10.0, 429), (60.0, 200), (61.0, 429)]


def test_replay_of_flap_fail_first_and_status() -> None:
    flap, first, broken = "flap=10,id=f", "fail_first=2,id=ff", "status=500,id=s"
    log = {flap: [1.0, 12.0, 25.0], first: [1.0, 2.0, 3.0], broken: [4.0]}
    by_spec: dict[str, list[int]] = {}
    for hit in replay_hits(log, [flap, first, broken]):
        by_spec.setdefault(hit.spec, []).append(hit.status)
    assert by_spec == {flap: [503, 200, 503], first: [503, 503, 200], broken: [500]}


def test_replay_refuses_random_faults() -> None:
    with pytest.raises(ValueError, match="flaky"):
        replay_hits({"flaky=0.5": [1.0]}, ["flaky=0.5"])


def test_max_in_window_counts_like_the_sim() -> None:
    assert max_in_window([], 60) == 0
    assert max_in_window([0.0, 30.0, 60.0], 60) == 2
    assert max_in_window([0.0, 30.0, 59.9], 60) == 3


def test_percentile_interpolates() -> None:
    assert interpolated_percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert math.isnan(interpolated_percentile([], 99))


def test_measure_counts_per_success_and_overruns() -> None:
    calls = [
        SeenCall(10.0, 10.1, True),
        SeenCall(11.0, 12.0, True),
        SeenCall(12.0, 22.1, False, "deadline_exceeded"),
    ]
    hits = [Hit(10.0, "s", 429), Hit(10.05, "s", 200), Hit(11.0, "s", 200), Hit(45.0, "s", 429)]
    m = tally_scenario(calls, hits, deadline=10.0, offered_for=60.0, warmup=30.0)
    assert (m.calls, m.ok, m.hits, m.throttled, m.overruns) == (3, 2, 4, 2, 1)
    assert m.attempts_per_ok == 2.0 and m.throttled_per_ok == 1.0
    assert m.late_throttled_share == 1.0
    assert m.ok_per_minute == 2.0
    assert m.answered == (True, True, False)
    assert m.failures == (("deadline_exceeded", 1),)


def test_no_success_gives_infinite_ratios() -> None:
    m = tally_scenario([SeenCall(0.0, 1.0, False)], [Hit(0.0, "s", 500)], deadline=5, offered_for=1)
    assert math.isinf(m.attempts_per_ok) and m.success_rate == 0.0


def test_recovery_target_reads_the_seventh_call() -> None:
    (scenario,) = select(build(1.0, "t"), ["recovery"])
    calls = [SeenCall(float(i), i + 0.01, i == 6) for i in range(7)]
    metrics = tally_scenario(calls, [], deadline=10, offered_for=0)
    (target,) = judge_scenario(scenario, metrics)
    assert target.met and target.measured == "x x x x x x ok"
    (missed,) = judge_scenario(scenario, tally_scenario(calls[:6], [], deadline=10, offered_for=0))
    assert not missed.met


def test_scenarios_scale_durations_and_are_unique_per_run() -> None:
    full, quick = build(1.0, "r1"), build(0.1, "r2")
    assert [s.key for s in full] == [
        *("throttle", "pool", "slow", "recovery", "replicas"),
        *("tail", "hedged"),
    ]
    assert quick[2].policy.deadline == pytest.approx(full[2].policy.deadline * 0.1)
    assert quick[0].load.per_second == full[0].load.per_second
    specs = [{s.spec for x in run for s in x.sources} for run in (full, quick)]
    assert not specs[0] & specs[1]
    with pytest.raises(ValueError, match="unknown scenario"):
        select(full, ["nope"])
    assert [s.number for s in select(full, ["2", "slow"])] == [2, 3]
