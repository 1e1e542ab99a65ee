"""``laneway size`` end to end: telemetry made by the simulator, read back, and the verdicts.

The simulator serves a known latency distribution (most answers fast, a
tail of slow ones, a share of 503s); the calls go through the engine with the
telemetry writer on, and ``laneway size`` must recover settings that answer
them within the caller's deadline. The recorded calls run in virtual time
(``tests.virtual``), so their latencies are the sim's exactly; ``--measure``
sends real requests to a real sim.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from laneway.app import build_engine
from laneway.cli.main import main
from laneway.cli.size import _candidate as size_candidate
from laneway.clocks import VirtualClock
from laneway.config.load import load_config
from laneway.config.models import ChatLaneConfig
from laneway.core.records import CallRecord
from laneway.core.types import ChatRequest
from laneway.errors import CallFailed
from laneway.sim import RunningSim
from laneway.telemetry import writer_for
from tests.helpers import Upstream, sim_url, unique_spec
from tests.virtual import VirtualSim

FAST, SLOW = 0.02, 0.3
REQUEST = ChatRequest([{"role": "user", "content": "size me"}])


def write_config(path: Path, sim: Upstream, spec: str, **lane: Any) -> Path:
    body = {
        "lanes": {
            "engram": {
                "retry_on": [503, "timeout"],
                "backoff": {"base": "50ms"},
                "min_attempt": "10ms",
                "sources": [{"base_url": sim_url(sim, spec), "model": "sim-model"}],
                **lane,
            }
        },
        "telemetry": {"url": str(path.parent / "telemetry.sqlite3"), "flush_interval": "50ms"},
    }
    path.write_text(yaml.safe_dump(body))
    return path


class Records:
    """A call observer that keeps every record, to be written out afterwards."""

    def __init__(self) -> None:
        self.kept: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.kept.append(record)


async def record_calls(path: Path, count: int, vsim: VirtualSim) -> list[CallRecord]:
    """``count`` chat calls, 16 at a time, in virtual time; their call records."""
    config, environ = load_config(path)
    records = Records()
    engine = build_engine(
        config, environ, transport=vsim.transport, clock=vsim.clock, observers=[records]
    )
    gate = asyncio.Semaphore(16)

    async def one() -> None:
        async with gate:
            await engine.chat("engram", REQUEST)

    try:
        await asyncio.gather(*(one() for _ in range(count)))
    finally:
        await engine.aclose()
    return records.kept


async def write_telemetry(path: Path, records: list[CallRecord]) -> None:
    """Hand ``records`` to the config's telemetry writer, as the engine would, and flush it."""
    config, _ = load_config(path)
    writer = writer_for(config.telemetry, path.parent, lambda record: (None, "unpriced"))
    assert writer is not None
    writer.start()
    for record in records:
        writer.observe(record)
    await writer.aclose()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Telemetry of 300 calls: 5% answer after 300 ms, 5% fail with 503 first."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    vsim = VirtualSim(VirtualClock(wall_start=time.time()))
    spec = unique_spec(f"sleep={FAST},slow=0.05,slow_sleep={SLOW},flaky=0.05,seed=7")
    config = write_config(
        tmp_path / "recorded.yaml", vsim, spec, attempt_timeout="2s", retries=3, deadline="10s"
    )
    records = vsim.clock.run(record_calls(config, 300, vsim))
    asyncio.run(write_telemetry(config, records))
    return config


def recommended(out: str) -> dict[str, Any]:
    snippet = out[out.index("lanes:") :].split("\n\n")[0]
    lanes: dict[str, Any] = yaml.safe_load(snippet)["lanes"]
    return dict(lanes["engram"])


def test_size_recovers_settings_that_answer_within_the_callers_deadline(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "size",
            "engram",
            "--config",
            str(recorded),
            "--client-deadline",
            "1.5s",
            "--margin",
            "300ms",
        ],
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "lane engram: 300 recorded call(s)" in out
    assert "503 x" in out
    picked = recommended(out)
    timeout = float(str(picked["attempt_timeout"]).removesuffix("ms")) / 1000
    assert timeout > SLOW, "the recommended timeout must not cut the slow tail"
    assert picked["retries"] >= 1, "5% of first attempts fail: a retry must rescue them"
    assert "recommended: " in out and "under client_deadline 1.50s" in out


def test_check_fails_a_timeout_that_cuts_the_tail(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tight = yaml.safe_load(recorded.read_text())
    tight["lanes"]["engram"]["attempt_timeout"] = "100ms"
    config = recorded.with_name("tight.yaml")
    config.write_text(yaml.safe_dump(tight))
    code = main(["size", "--check", "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL lane engram: attempt_timeout 100ms cuts" in out


def test_check_fails_a_lane_with_no_margin_under_its_client_deadline(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["size", "--check", "--config", str(recorded), "--client-deadline", "400ms"]
    args += ["--margin", "200ms"]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 1
    assert "under client_deadline 400ms" in out


def test_check_passes_settings_that_fit(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["size", "--check", "--config", str(recorded), "--client-deadline", "10s"]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("ok   lane engram: p99 wall")


def test_measure_bounds_the_wall_and_the_requests_sent(
    sim: RunningSim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "slow.yaml", sim, "ok", deadline="5s", max_pushbacks=0)
    args = ["size", "engram", "--config", str(config), "--measure", "--slow-upstream", "30s"]
    args += ["--candidate", "100ms/2", "--candidate", "50ms/1", "--max-calls", "5"]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    rows = {line.split()[0]: line for line in out.splitlines() if "ms/" in line.split()[0]}
    first, second = rows["100ms/2"].split(), rows["50ms/1"].split()
    assert first[4:6] == ["1", "3"], "one run of 3 requests; a second would pass --max-calls"
    worst = float(first[-1].removesuffix("s"))
    assert 0.4 <= worst < 0.4 + 0.3, "3 x 100 ms + 2 x 50 ms backoff, not a second more"
    assert second[4:6] == ["1", "2"]
    assert "sent 5 upstream request(s) (--max-calls 5)" in out


def test_no_telemetry_yet_says_so(
    sim: RunningSim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "fresh.yaml", sim, "ok")
    code = main(["size", "engram", "--config", str(config)])
    assert code == 0
    assert "no recorded calls" in capsys.readouterr().out


def test_a_measured_candidate_keeps_its_own_attempt_timeout(tmp_path: Path) -> None:
    """Failed before: ``5s/0`` on a lane with a 1 s deadline was measured with the 1 s deadline."""
    lane = ChatLaneConfig.model_validate(
        {"deadline": "1s", "sources": [{"base_url": "http://127.0.0.1:1/v1", "model": "m"}]}
    )
    ns = argparse.Namespace(client_deadline=None, margin=0.5)
    settings = size_candidate("5s/0", lane, ns)
    assert settings.attempt_timeout == 5.0 and settings.retries == 0
    assert settings.deadline >= 5.0
    assert settings.apply(lane).deadline >= 5.0
    held = size_candidate("5s/0", lane, argparse.Namespace(client_deadline=3.0, margin=0.5))
    assert held.deadline == 2.5, "a caller's deadline still bounds the candidate"


async def record_failing_calls(path: Path, count: int, vsim: VirtualSim) -> list[CallRecord]:
    """``count`` chat calls that all fail; their call records."""
    config, environ = load_config(path)
    records = Records()
    engine = build_engine(
        config, environ, transport=vsim.transport, clock=vsim.clock, observers=[records]
    )
    try:
        for _ in range(count):
            with pytest.raises(CallFailed):
                await engine.chat("engram", REQUEST)
    finally:
        await engine.aclose()
    return records.kept


def test_check_fails_a_lane_that_answered_none_of_its_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed before: ``--check`` printed ``ok`` for a lane that answered 0% of its calls."""
    vsim = VirtualSim(VirtualClock(wall_start=time.time()))
    config = write_config(tmp_path / "dead.yaml", vsim, unique_spec("status=500"), retries=0)
    records = vsim.clock.run(record_failing_calls(config, 20, vsim))
    asyncio.run(write_telemetry(config, records))
    code = main(["size", "--check", "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL lane engram: the current settings answer 0.0% of the 20 recorded calls" in out


def test_no_setting_is_recommended_when_no_call_was_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed before: with no call answered, the current settings were recommended."""
    vsim = VirtualSim(VirtualClock(wall_start=time.time()))
    config = write_config(tmp_path / "dead.yaml", vsim, unique_spec("status=500"), retries=0)
    records = vsim.clock.run(record_failing_calls(config, 20, vsim))
    asyncio.run(write_telemetry(config, records))
    assert main(["size", "engram", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "recommended:" not in out
    assert "no candidate would have answered any recorded call" in out
