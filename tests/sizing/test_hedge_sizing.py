"""``laneway size`` sizes a hedge: ``after`` from the answer times, its effect by replay (issue 26).

The recorded lane has a primary with a long tail (one answer in twenty takes
5 s, the rest 50 ms) and a fallback it never needed. Replayed with a hedge,
the slow answers are raced on the fallback: the p99 falls from 5 s to about
the hedge's ``after`` plus an answer, for the 5% more requests the tail costs.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from laneway.app import build_engine
from laneway.cli.main import main
from laneway.clocks import VirtualClock
from laneway.config.load import load_config
from laneway.config.models import ChatLaneConfig, LaneConfig
from laneway.sizing.hedging import hedge_afters, hedge_scores, recommend_hedge
from laneway.sizing.samples import RecordedAttempt, RecordedCall
from tests.helpers import sim_url, unique_spec
from tests.sizing.test_size_cli import REQUEST, Records, write_telemetry
from tests.virtual import VirtualSim

FAST, SLOW = 0.05, 5.0


def two_sources(**lane: Any) -> LaneConfig:
    sources = [
        {"name": "a", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
        {"name": "b", "base_url": "http://127.0.0.1:9/v1", "model": "m", "priority": 1},
    ]
    return ChatLaneConfig.model_validate({"sources": sources, "attempt_timeout": "10s", **lane})


def long_tail(count: int = 400) -> list[RecordedCall]:
    """One call a second on ``a``; every twentieth answer takes 5 s."""
    return [
        RecordedCall((RecordedAttempt("a", "ok", SLOW if n % 20 == 7 else FAST),), at=float(n))
        for n in range(count)
    ]


def test_after_candidates_are_the_answer_times_percentiles_rounded_up() -> None:
    assert hedge_afters(long_tail(), stream=False) == [0.1, 5.5, "p95"]


def test_a_hedge_after_the_usual_answer_cuts_the_tail_within_its_share() -> None:
    calls = long_tail()
    scores = hedge_scores("l", two_sources(), calls)
    by_after = {score.after: score for score in scores}
    off, fixed, live = by_after[None], by_after[0.1], by_after["p95"]
    assert off.p50 == pytest.approx(FAST) and (off.p99, off.requests) == (SLOW, 1.0)
    assert fixed.p99 == pytest.approx(0.1 + FAST), "each slow answer raced after 100 ms, and lost"
    assert live.p99 == pytest.approx(FAST * 1.1 + FAST), "after: p95 is 10% past the p95"
    for hedged in (fixed, live):
        assert hedged.p50 == pytest.approx(FAST) and hedged.answered == 1.0
    assert fixed.requests == pytest.approx(1.05), "one hedge per slow answer, none else"
    cap = "the first slow answer came before the 20 answers a live percentile needs: cap 5 s"
    assert live.requests == pytest.approx(1 + 19 / 400), cap
    picked = recommend_hedge(scores)
    assert picked is not None
    best, reason = picked
    assert best is live
    assert "cut the p99 from 5s to 105ms" in reason and "4.8% more upstream requests" in reason


def test_no_hedge_is_recommended_for_a_lane_without_a_tail() -> None:
    calls = [RecordedCall((RecordedAttempt("a", "ok", FAST),), at=float(n)) for n in range(100)]
    assert recommend_hedge(hedge_scores("l", two_sources(), calls)) is None


def test_a_hedge_budget_too_small_for_the_tail_is_not_recommended() -> None:
    """With ``max_share: 0.01`` most slow answers find the bucket empty: p99 stays 5 s."""
    scores = hedge_scores("l", two_sources(), long_tail(), max_share=0.01)
    assert recommend_hedge(scores, max_share=0.01) is None


def write_two_source_config(path: Path, vsim: VirtualSim) -> Path:
    tail = unique_spec(f"sleep={FAST},slow=0.05,slow_sleep={SLOW},seed=3")
    body = {
        "lanes": {
            "engram": {
                "attempt_timeout": "10s",
                "sources": [
                    {"name": "tail", "base_url": sim_url(vsim, tail), "model": "m"},
                    {
                        "name": "steady",
                        "base_url": sim_url(vsim, unique_spec(f"sleep={FAST}")),
                        "model": "m",
                        "priority": 1,
                    },
                ],
            }
        },
        "telemetry": {"url": str(path.parent / "telemetry.sqlite3"), "flush_interval": "50ms"},
    }
    path.write_text(yaml.safe_dump(body))
    return path


async def record_spaced(path: Path, count: int, vsim: VirtualSim) -> list[Any]:
    """``count`` calls, one every 200 ms, in virtual time; their records."""
    config, environ = load_config(path)
    records = Records()
    engine = build_engine(
        config, environ, transport=vsim.transport, clock=vsim.clock, observers=[records]
    )

    async def one(n: int) -> None:
        await vsim.clock.sleep(0.2 * n)
        await engine.chat("engram", REQUEST)

    try:
        await asyncio.gather(*(one(n) for n in range(count)))
    finally:
        await engine.aclose()
    return records.kept


def test_size_prints_the_hedge_to_declare_from_telemetry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vsim = VirtualSim(VirtualClock(wall_start=time.time()))
    config = write_two_source_config(tmp_path / "laneway.yaml", vsim)
    records = vsim.clock.run(record_spaced(config, 400, vsim))
    asyncio.run(write_telemetry(config, records))
    assert main(["size", "engram", "--config", str(config), "--percentiles", "99"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("hedging engram:") :]
    rows = {line.split()[0]: line.split() for line in section.splitlines()[1:6] if line.strip()}
    assert rows["off"][2] == "5s", section
    assert "recommended: hedge after: p95 would have cut the p99 from 5s to 105ms" in section
    snippet = section[section.index("lanes:") :]
    assert yaml.safe_load(snippet) == {
        "lanes": {"engram": {"hedge": {"after": "p95", "max_share": 0.1}}}
    }
