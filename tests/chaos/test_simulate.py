"""``laneway simulate`` end to end at a small scale: the table renders, request 7 is answered.

No assertion is tied to a target: targets are benchmark figures, judged in
``docs/benchmarks.md``, not pass/fail conditions.
"""

from __future__ import annotations

import asyncio
import json
import random
import re

import aiohttp
import pytest

from laneway import Laneway
from laneway.chaos.drive import offer_to
from laneway.chaos.lanes import lane_config
from laneway.chaos.metrics import SeenCall
from laneway.chaos.report import as_json, text_table
from laneway.chaos.runner import outcome
from laneway.chaos.scenarios import Scenario, build, select
from laneway.chaos.upstream import hits, replay_hits
from laneway.cli.main import main
from laneway.errors import CallFailed
from laneway.sim import RunningSim
from tests.helpers import one_lane, unique_spec
from tests.virtual import VirtualSim

SCALE = "0.03"
REPLICAS_SCALE = "0.01"


HEADER = [
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


def test_simulate_command_runs_a_scenario_in_real_time(sim: RunningSim, capsys, tmp_path) -> None:
    """The command's wiring, on loopback and the system clock: its cheapest scenario, 4."""
    report = tmp_path / "chaos.json"
    args = ["simulate", "recovery", "--scale", SCALE, "--sim", sim.base_url, "--json", str(report)]
    assert main(args) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("scenario"))
    assert header.split() == HEADER
    recovery = next(line for line in out.splitlines() if line.startswith("4 recovery"))
    assert recovery.endswith("request 7 answered: met (x x x x x x ok)")
    table = out[out.index(header) : out.index("notes:") if "notes:" in out else None]
    _assert_verdicts(table, count=1)
    figures = {entry["scenario"]: entry for entry in json.loads(report.read_text())}
    assert figures["recovery"]["metrics"]["answered"] == [False] * 6 + [True]
    assert figures["recovery"]["metrics"]["hits"] == 7


def test_replicas_run_as_two_processes_on_redis(sim: RunningSim, capsys) -> None:
    """Scenario 5 stays real: two replica processes share one source's rate through Redis."""
    args = ["simulate", "replicas", "--scale", REPLICAS_SCALE, "--sim", sim.base_url]
    assert main(args) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("5 replicas"))
    assert not row.endswith("not run"), out


def test_scenarios_1_to_4_at_full_scale_in_virtual_time() -> None:
    """Scenarios 1-4 at scale 1 (two minutes each) on one virtual clock: exact figures.

    The library runs on the ``VirtualClock`` its engine was built with, the
    load generator reads the same clock, and the sim is served in-process on
    it (``tests.virtual``), so the rate windows are the real 60 s ones and
    every figure is reproducible. Each lane's jitter is seeded.
    """
    scenarios = build(1.0, "virtual")[:4]
    vsim = VirtualSim()
    runs = vsim.clock.run(_offer_all(vsim, scenarios))
    log = {source.spec: vsim.hit_times(source.spec) for s in scenarios for source in s.sources}
    outcomes = [outcome(s, calls, log, []) for s, calls in zip(scenarios, runs, strict=True)]
    table = text_table(outcomes)
    assert table.splitlines()[0].split() == HEADER
    cells = [re.split(r"\s{2,}", line.strip()) for line in table.splitlines()[2:]]
    assert cells == EXPECTED_ROWS, table
    _assert_verdicts(table[: table.index("notes:")], count=7)
    figures = {entry["scenario"]: entry for entry in json.loads(json.dumps(as_json(outcomes)))}
    assert figures["recovery"]["metrics"]["answered"] == [False] * 6 + [True]
    assert figures["recovery"]["metrics"]["hits"] == 7


async def _offer_all(vsim: VirtualSim, scenarios: list[Scenario]) -> list[list[SeenCall]]:
    """Every scenario's load at once, as ``run_all`` offers it, through ``offer_to``."""

    async def one(scenario: Scenario) -> list[SeenCall]:
        async with vsim.laneway(lane_config(scenario, vsim.base_url)) as lw:
            lw.engine.loop.rng = random.Random(scenario.number)
            return (await offer_to(lw, scenario, -vsim.started)).calls

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(s)) for s in scenarios]
    return [task.result() for task in tasks]


def _assert_verdicts(table: str, count: int) -> None:
    """``count`` targets, each rendered ``<target>: met (...)`` or ``NOT met (...)``."""
    verdicts = re.findall(r"(\S*) (?:NOT )?met \(", table)
    assert len(verdicts) == count, table
    assert all(before.endswith(":") or before == "NOT" for before in verdicts), table


EXPECTED_ROWS = [
    [
        "1 throttle",
        "120",
        "63.3%",
        "0.00",
        "1.00",
        "17.00 s",
        "29.75 s",
        "0",
        "429s < 2% of upstream calls after 30 s: met (0.0%)",
    ],
    ["successes at the cap: >= 28.5/min (95% of 30 rpm): met (30.0/min)"],
    [
        "2 pool",
        "240",
        "100.0%",
        "0.00",
        "1.02",
        "0.00 s",
        "0.00 s",
        "0",
        "success >= 99%: met (100.0%)",
    ],
    ["attempts per success < 1.3: met (1.02)"],
    [
        "3 slow",
        "240",
        "100.0%",
        "0.00",
        "1.02",
        "0.00 s",
        "2.00 s",
        "0",
        "no deadline overruns: met (0)",
    ],
    ["p99 < deadline 10 s: met (2.00 s)"],
    [
        "4 recovery",
        "7",
        "14.3%",
        "0.00",
        "7.00",
        "0.00 s",
        "0.00 s",
        "0",
        "request 7 answered: met (x x x x x x ok)",
    ],
    [""],
    ["notes:"],
    ["1 throttle: failed calls: deadline_exceeded 44"],
    ["4 recovery: failed calls: upstream_error 6"],
]
"""The virtual run's table below its header, cell by cell (cells are split on runs of spaces)."""


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


def test_a_long_tail_with_and_without_a_hedge_in_virtual_time() -> None:
    """Scenarios 6 and 7 (issue 26): the tail's p99 of 5 s falls under 1 s with a hedge after
    200 ms, for at most 10% more upstream requests; both runs meet the same seeded tail."""
    scenarios = select(build(1.0, "virtual"), ["tail", "hedged"])
    vsim = VirtualSim()
    runs = vsim.clock.run(_offer_all(vsim, scenarios))
    log = {source.spec: vsim.hit_times(source.spec) for s in scenarios for source in s.sources}
    tail, hedged = (outcome(s, calls, log, []) for s, calls in zip(scenarios, runs, strict=True))
    assert tail.metrics is not None and hedged.metrics is not None
    assert tail.metrics.calls == hedged.metrics.calls == 600
    assert tail.metrics.ok == hedged.metrics.ok == 600
    assert tail.metrics.p99 == pytest.approx(5.0, abs=0.05), "2.5% of calls meet the 5 s tail"
    assert hedged.metrics.p99 < 1.0 and tail.metrics.p99 / hedged.metrics.p99 >= 5
    assert hedged.metrics.attempts_per_ok <= 1.1
    assert all(target.met for target in [*tail.targets, *hedged.targets])
    table = text_table([tail, hedged])
    assert "6 tail" in table and "7 hedged" in table
