"""Run scenarios concurrently against one sim and judge them.

Scenarios share no CPU-bound resource (the sim answers a few requests a
second for each), so they run at the same time: the whole set takes as long
as the longest one. A shared-state scenario runs its replicas as separate
processes on one Redis, under a lane name unique to the run, whose keys are
deleted afterwards.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field

import aiohttp
from redis.exceptions import RedisError

from laneway.chaos import upstream
from laneway.chaos.drive import ReplicaRun, drive
from laneway.chaos.metrics import ScenarioTally, SeenCall, tally_scenario
from laneway.chaos.scenarios import Scenario
from laneway.chaos.targets import Target, judge_scenario
from laneway.state.redis_client import fast_failing_client

DEFAULT_STATE_URL = "redis://127.0.0.1:6379/0"
REPLICA_GRACE = 60.0
"""Seconds a replica process may take beyond its load and deadline (start-up, drain)."""


@dataclass(frozen=True, slots=True)
class ScenarioOutcome:
    """A scenario's result: its metrics and judged targets, or why it was skipped."""

    scenario: Scenario
    metrics: ScenarioTally | None
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


async def run_all(
    scenarios: list[Scenario], sim_url: str, state_url: str = DEFAULT_STATE_URL
) -> list[ScenarioOutcome]:
    """Run every scenario at once; outcomes come back in the scenarios' order."""
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_run(s, sim_url, state_url)) for s in scenarios]
    runs = [task.result() for task in tasks]
    async with aiohttp.ClientSession() as session:
        log = await upstream.hits(session, sim_url)
    return [
        outcome(s, calls, log, notes) for s, (calls, notes) in zip(scenarios, runs, strict=True)
    ]


def outcome(
    scenario: Scenario,
    calls: list[SeenCall] | None,
    log: dict[str, list[float]],
    notes: list[str],
) -> ScenarioOutcome:
    """Measure and judge one scenario's calls against the sim's hit log."""
    if calls is None:
        return ScenarioOutcome(scenario, None, notes=notes)
    hits = upstream.replay_hits(log, [source.spec for source in scenario.sources])
    metrics = tally_scenario(
        calls,
        hits,
        deadline=scenario.policy.deadline,
        offered_for=scenario.load.seconds,
        warmup=scenario.warmup,
    )
    return ScenarioOutcome(scenario, metrics, judge_scenario(scenario, metrics), notes)


async def _run(
    scenario: Scenario, sim_url: str, state_url: str
) -> tuple[list[SeenCall] | None, list[str]]:
    if scenario.replicas == 1:
        return (await drive(scenario, sim_url)).calls, []
    problem = await _unreachable(state_url)
    if problem is not None:
        return None, [f"skipped: Redis at {state_url} is unreachable ({problem})"]
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(_replica(scenario, sim_url, state_url))
                for _ in range(scenario.replicas)
            ]
    finally:
        await _delete_lane_keys(state_url, scenario.lane)
    runs = [task.result() for task in tasks]
    calls = [call for run in runs for call in run.calls]
    notes = [f"replica {i + 1}: Redis unreachable {r.outages} time(s)" for i, r in enumerate(runs)]
    return calls, [n for n, r in zip(notes, runs, strict=True) if r.outages]


async def _replica(scenario: Scenario, sim_url: str, state_url: str) -> ReplicaRun:
    """One replica as its own OS process, with its own ``Engine``."""
    args = [sim_url, state_url, repr(scenario.scale), scenario.run, scenario.key]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "laneway.chaos.replica",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    budget = scenario.load.seconds + scenario.policy.deadline + REPLICA_GRACE
    try:
        async with asyncio.timeout(budget):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        raise RuntimeError(f"replica of {scenario.key} failed:\n{err.decode()[-2000:]}")
    report = json.loads(out.decode().strip().splitlines()[-1])
    calls = [SeenCall.from_json(call) for call in report["calls"]]
    return ReplicaRun(calls, int(report["outages"]))


STATE_PREFIX = "laneway"
"""The key prefix of the source store the replicas open (``RedisStore``'s default)."""


async def _unreachable(state_url: str) -> str | None:
    """Why Redis at ``state_url`` does not answer, or ``None`` (an admin client, not a store)."""
    client = fast_failing_client(state_url, 0.5)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        return str(exc)
    finally:
        await client.aclose()
    return None


async def _delete_lane_keys(state_url: str, lane: str) -> None:
    """Delete the lane's keys, so a run leaves nothing behind in Redis."""
    client = fast_failing_client(state_url, 0.5)
    try:
        pattern = f"{STATE_PREFIX}:{{{lane}}}:*"
        keys = [key async for key in client.scan_iter(match=pattern)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
