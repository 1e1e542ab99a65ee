"""`laneway check`'s request bound and walk order, held against the simulator's hit counts.

Every lane of ``examples/laneway.yaml`` is pointed at an always-failing
simulated upstream (a status the lane retries, with a 1 ms Retry-After so
pushbacks apply too) and called once; the upstream requests counted by the
simulator must be exactly what ``check`` prints, per source in the order it
prints. Backoff is shortened to 1 ms: it changes when requests are made,
not how many.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway import Laneway
from laneway.app.policies import retry_policy
from laneway.cli.check import lane_report
from laneway.cli.check_walk import failing_walks
from laneway.cli.main import main
from laneway.config.load import load_config
from laneway.config.models import BackoffConfig, ChatLaneConfig, LaneConfig
from laneway.errors import CallFailed
from laneway.sim import RunningSim
from tests.engine.spy import sim_hits
from tests.helpers import sim_url, unique_spec

EXAMPLE = Path(__file__).parents[2] / "examples" / "laneway.yaml"
EXAMPLE_CONFIG = load_config(EXAMPLE)[0]
EXAMPLE_LANES = EXAMPLE_CONFIG.lanes


def failing_status(lane: LaneConfig) -> int:
    """A status the lane retries (a pushback status first), else 503."""
    listed = [label for label in lane.retry_on if isinstance(label, int)]
    pushback = [code for code in listed if code in (429, 503)]
    return (pushback or listed or [503])[0]


def failing_lane(sim: RunningSim, lane: LaneConfig) -> tuple[LaneConfig, list[str]]:
    fault = f"status={failing_status(lane)},retry_after_ms=1"
    specs = [unique_spec(fault) for _ in lane.sources]
    sources = [
        s.model_copy(update={"base_url": sim_url(sim, spec), "api_key": None})
        for s, spec in zip(lane.sources, specs, strict=True)
    ]
    fast = BackoffConfig(kind="constant", base=0.001)
    return lane.model_copy(update={"sources": sources, "backoff": fast}), specs


async def call_once(lw: Laneway, name: str, lane: LaneConfig) -> CallFailed:
    with pytest.raises(CallFailed) as err:
        if lane.kind == "embed":
            await lw.embed(name, ["a"])
        else:
            await lw.chat(name, [{"role": "user", "content": "hi"}])
    return err.value


@pytest.mark.parametrize("name", sorted(EXAMPLE_LANES))
async def test_checks_request_bound_is_the_hit_count_of_a_failing_upstream(sim, name) -> None:
    lane = EXAMPLE_LANES[name]
    bound = int(lane_report(name, lane, {}).row[2])
    failing, specs = failing_lane(sim, lane)
    config = EXAMPLE_CONFIG.model_copy(update={"lanes": {name: failing}})
    async with Laneway.from_settings(config, environ={}) as lw:
        error = await call_once(lw, name, lane)
    counts = [await sim_hits(sim, spec) for spec in specs]
    assert sum(counts) == len(error.attempts) == bound
    if len(lane.sources) > 1:
        _, walk = failing_walks(lane, retry_policy(lane))[0]
        assert [a.source for a in error.attempts] == walk
        assert counts == [walk.count(n) for n in lane.source_names()]


def checked(tmp_path: Path, capsys: pytest.CaptureFixture[str], lane: str, spare: str) -> str:
    """``check``'s output for lane ``x``, sources ``a`` and ``b`` (``spare``: b's extra fields)."""
    path = tmp_path / "laneway.yaml"
    path.write_text(
        f"lanes:\n  x:\n{lane}    sources:\n"
        "      - {name: a, base_url: 'http://127.0.0.1:1/v1', model: m}\n"
        f"      - {{name: b, base_url: 'http://127.0.0.1:1/v1', model: m, {spare}}}\n"
    )
    assert main(["check", str(path)]) == 0
    return capsys.readouterr().out


def test_check_prints_the_bound_the_walk_and_per_class_counts(tmp_path, capsys) -> None:
    lane = "    retries: 3\n    max_pushbacks: 1\n    retry_on: {503: 2, timeout: 1}\n"
    out = checked(tmp_path, capsys, lane, "priority: 1")
    assert "503 x2, timeout x1" in out
    assert "requests x: at most 5 = 1 attempt + 3 retries + 1 pushback" in out
    assert "walk x: on an error status: a, a, b" in out
    assert "walk x: on a timeout or refused connection: a, b" in out


@pytest.mark.parametrize(
    ("mode", "prefill", "bound"),
    [("true", "true", 6), ("true", "false", 3), ("restart", "false", 6), ("restart", "true", 9)],
)
def test_a_stream_continuation_counts_the_lanes_whole_policy_again(
    tmp_path, capsys, mode: str, prefill: str, bound: int
) -> None:
    lane = f"    retries: 2\n    retry_on: [503]\n    continue_on_cut: {mode}\n"
    out = checked(tmp_path, capsys, lane, f"accepts_prefill: {prefill}")
    assert f"requests x: at most {bound} = " in out


def test_check_says_its_bound_holds_under_sdk_default_retries(tmp_path, capsys) -> None:
    """Issue 23 defect 2: the bound is what a caller on its SDK's defaults gets."""
    out = checked(tmp_path, capsys, "    retries: 1\n    retry_on: [500]\n", "priority: 1")
    assert "requests x: at most 2 = 1 attempt + 1 retry" in out
    assert "requests under an SDK's default retries: the same" in out
    assert "x-should-retry: false" in out


def warning_about(out: str, source: str) -> str:
    """The line of ``check``'s output that warns about ``source`` ('' when none does)."""
    return next((line for line in out.splitlines() if f"source {source} is never" in line), "")


def test_check_warns_of_a_source_the_error_walk_never_reaches(tmp_path, capsys) -> None:
    """Failed before: check printed the walk ``a, a`` and no warning about ``b``."""
    out = checked(tmp_path, capsys, "    retries: 1\n    retry_on: [503, timeout]\n", "priority: 1")
    assert "walk x: on an error status: a, a" in out
    line = warning_about(out, "b")
    assert "x: source b is never tried after an error status" in line
    assert line.endswith("not admitted, times out or its connection fails")
    assert warning_about(out, "a") == ""


def test_check_says_a_source_is_reached_only_when_not_admitted(tmp_path, capsys) -> None:
    out = checked(tmp_path, capsys, "    retries: 1\n    retry_on: [503]\n", "priority: 1")
    assert warning_about(out, "b").endswith("reached only when an earlier source is not admitted")


def test_check_does_not_warn_when_the_walk_reaches_every_source(tmp_path, capsys) -> None:
    out = checked(tmp_path, capsys, "    retries: 2\n    retry_on: [503]\n", "priority: 1")
    assert warning_about(out, "b") == ""


SOURCE_A = "{name: a, base_url: 'http://127.0.0.1:1/v1', model: m, breaker: {failures: 1}}"


def test_check_walks_past_a_source_whose_breaker_opens_within_the_call(tmp_path, capsys) -> None:
    """Failed before: check printed ``a, a, b``; a's breaker opens on its first failure."""
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  x:\n    retries: 2\n    retry_on: [429, 503]\n    backoff: {base: 10ms}\n"
        "    sources:\n"
        f"      - {SOURCE_A}\n"
        "      - {name: b, base_url: 'http://127.0.0.1:1/v1', model: m, priority: 1}\n"
    )
    main(["check", str(path)])
    out = capsys.readouterr().out
    assert "walk x: on an error status: a, b, b" in out
    assert "walk x: on a 429: a, a, b" in out, "a 429 counts for no breaker"


async def test_the_breaker_walk_is_the_engines(sim) -> None:
    specs = [unique_spec("status=503"), unique_spec("status=503")]
    lane = ChatLaneConfig.model_validate(
        {
            "retries": 2,
            "retry_on": [503],
            "backoff": {"base": "10ms"},
            "sources": [
                {
                    "name": "a",
                    "base_url": sim_url(sim, specs[0]),
                    "model": "m",
                    "breaker": {"failures": 1},
                },
                {"name": "b", "base_url": sim_url(sim, specs[1]), "model": "m", "priority": 1},
            ],
        }
    )
    config = EXAMPLE_CONFIG.model_copy(update={"lanes": {"x": lane}})
    async with Laneway.from_settings(config, environ={}) as lw:
        error = await call_once(lw, "x", lane)
    assert [a.source for a in error.attempts] == ["a", "b", "b"]
    assert failing_walks(lane, retry_policy(lane))[0] == ("an error status", ["a", "b", "b"])


def test_check_states_the_walks_at_the_jitters_bounds(tmp_path, capsys) -> None:
    lane = "    retries: 2\n    retry_on: [503]\n    deadline: 1.1s\n"
    out = checked(tmp_path, capsys, lane + "    backoff: {base: 1s, jitter: full}\n", "priority: 1")
    assert "walk x: on an error status: a, b" in out
    assert "with jitter: a, b at the longest backoffs, a, a, b at the shortest" in out
    steady = checked(tmp_path, capsys, lane + "    backoff: {base: 1s}\n", "priority: 1")
    assert "with jitter" not in steady
