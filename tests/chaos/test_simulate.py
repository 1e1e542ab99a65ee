"""``laneway simulate`` end to end at a small scale: the table renders, request 7 is answered.

No assertion is tied to a target: targets are benchmark figures, judged in
``docs/benchmarks.md``, not pass/fail conditions.
"""

from __future__ import annotations

import json
import re

import aiohttp
import pytest

from laneway import Laneway
from laneway.chaos.upstream import hits, replay_hits
from laneway.cli.main import main
from laneway.errors import CallFailed
from laneway.sim import RunningSim
from tests.helpers import one_lane, unique_spec

SCALE = "0.03"


def test_simulate_renders_every_scenario(sim: RunningSim, capsys, tmp_path) -> None:
    report = tmp_path / "chaos.json"
    assert main(["simulate", "--scale", SCALE, "--sim", sim.base_url, "--json", str(report)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("scenario"))
    assert header.split() == [
        "scenario",
        "calls",
        "success",
        "429s/success",
        "attempts/success",
        "p50",
        "p99",
        "overruns",
        "targets",
    ]
    for name in ("1 throttle", "2 pool", "3 slow", "4 recovery", "5 replicas"):
        assert any(line.startswith(name) for line in out.splitlines()), name
    recovery = next(line for line in out.splitlines() if line.startswith("4 recovery"))
    assert recovery.endswith("request 7 answered: met (x x x x x x ok)")
    table = out[out.index(header) : out.index("notes:") if "notes:" in out else None]
    verdicts = re.findall(r"(\S*) (?:NOT )?met \(", table)
    assert len(verdicts) >= 7, table
    assert all(before.endswith(":") or before == "NOT" for before in verdicts), table
    figures = {entry["scenario"]: entry for entry in json.loads(report.read_text())}
    assert figures["recovery"]["metrics"]["answered"] == [False] * 6 + [True]
    assert figures["recovery"]["metrics"]["hits"] == 7


def test_unknown_scenario_is_an_error(capsys) -> None:
    assert main(["simulate", "nope"]) == 2
    assert "unknown scenario(s) nope" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("fail_first=3,status=503", [503] * 3 + [200] * 2), ("rpm=2", [200, 200, 429])],
)
async def test_replayed_statuses_match_what_laneway_saw(sim: RunningSim, spec, expected) -> None:
    """The sim's rules, replayed over its hit log, give the statuses the engine recorded."""
    spec = unique_spec(spec)
    seen: list[int | None] = []
    config = one_lane(sim, spec, deadline="2s", max_pushbacks=0)
    async with Laneway.from_settings(config, environ={}) as lw:
        for _ in expected:
            try:
                answer = await lw.chat("lane", [{"role": "user", "content": "hi"}])
                seen += [a.status for a in answer.attempts]
            except CallFailed as exc:
                seen += [a.status for a in exc.attempts]
    async with aiohttp.ClientSession() as client:
        log = await hits(client, sim.base_url)
    assert [h.status for h in replay_hits(log, [spec])] == seen == expected


def test_replicas_without_redis_are_reported_not_run(sim: RunningSim, capsys) -> None:
    args = ["simulate", "replicas", "--scale", SCALE, "--sim", sim.base_url]
    assert main([*args, "--state-url", "redis://127.0.0.1:1/0"]) == 0
    out = capsys.readouterr().out
    assert any(
        line.startswith("5 replicas") and line.endswith("not run") for line in out.splitlines()
    )
    assert "5 replicas: skipped: Redis at redis://127.0.0.1:1/0 is unreachable" in out
