"""Running the fault rows against one client: the schedule, progress, and a time bound.

A series (flapping: 20 calls over 76 s) starts at once and runs beside the
single-call rows, which go one after another, so no row's time to answer
carries another row's load and the whole run lasts about as long as the
series. Each row's result is reported as it ends, and every
``PROGRESS_EVERY`` seconds the rows still running are named. The run is
bounded: every call gives up after the lane's deadline plus
``CLIENT_GRACE``, and the run after ``time_budget``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

import aiohttp

from laneway.chaos.asking import StreamedAnswer
from laneway.chaos.fault_report import RowResult
from laneway.chaos.faults import (
    CLIENT_GRACE,
    DEFAULT_SLACK,
    POLICY,
    call_scenario,
    count_hits,
    judge_fault,
)
from laneway.sim.scenarios import FaultScenario, Specs

PROGRESS_EVERY = 10.0
"""Seconds between the progress lines that name the rows still running."""
STARTUP_GRACE = 10.0

Report = Callable[[str], None]
Row = Callable[[FaultScenario], Awaitable[RowResult]]
Rename = Callable[[FaultScenario, StreamedAnswer], StreamedAnswer]


def time_budget(scenarios: Sequence[FaultScenario], scale: float) -> float:
    """Seconds the run may take: its single-call rows in turn, or its longest series."""
    call = POLICY.deadline * scale + CLIENT_GRACE
    singles = sum(call for s in scenarios if s.calls == 1)
    series = max((s.span * scale + call for s in scenarios if s.calls > 1), default=0.0)
    return max(singles, series) + STARTUP_GRACE


def row_runner(
    session: aiohttp.ClientSession,
    chat_url: str,
    sim_url: str,
    specs: dict[str, Specs],
    scale: float,
    rename: Rename | None = None,
    slack: float = DEFAULT_SLACK,
) -> Row:
    """Run one row through the client at ``chat_url``: its calls, the sim's counts, the verdict.

    ``slack`` (seconds) is added to the row's time bound. ``rename`` rewrites
    an answer whose chunks name their source otherwise than by the upstream's
    ``model`` (LiteLLM names the model group).
    """

    async def row(scenario: FaultScenario) -> RowResult:
        answers = await call_scenario(session, chat_url, scenario.key, scenario, scale)
        if rename is not None:
            answers = [rename(scenario, answer) for answer in answers]
        hits = await count_hits(session, sim_url, specs[scenario.key])
        return RowResult(
            scenario, answers, hits, judge_fault(scenario, answers, hits, scale, slack)
        )

    return row


async def run_rows(
    scenarios: Sequence[FaultScenario], row: Row, scale: float, report: Report
) -> list[RowResult]:
    """Every row on the schedule above; results in the rows' order."""
    started = time.monotonic()
    results: dict[str, RowResult] = {}
    running: set[str] = set()

    async def one(scenario: FaultScenario) -> None:
        running.add(scenario.key)
        result = results[scenario.key] = await row(scenario)
        running.discard(scenario.key)
        report(
            f"[{len(results):2}/{len(scenarios)}] {time.monotonic() - started:6.1f} s  "
            f"{scenario.key}: {result.outcome()}, {result.time()} -> {result.verdict()}"
        )

    async def singles() -> None:
        for scenario in scenarios:
            if scenario.calls == 1:
                await one(scenario)

    async def tick() -> None:
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            elapsed = time.monotonic() - started
            report(f"        {elapsed:6.1f} s  running: {', '.join(sorted(running))}")

    ticker = asyncio.create_task(tick())
    try:
        async with asyncio.timeout(time_budget(scenarios, scale)), asyncio.TaskGroup() as group:
            group.create_task(singles())
            for scenario in scenarios:
                if scenario.calls > 1:
                    group.create_task(one(scenario))
    finally:
        ticker.cancel()
    return [results[scenario.key] for scenario in scenarios]
