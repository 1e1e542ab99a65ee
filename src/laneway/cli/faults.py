"""``laneway simulate --faults``: issue 10's fault table, through a gateway on loopback.

Every row has its own lane (``laneway.chaos.faults``) on one gateway that
uvicorn serves on a loopback port in this process, and its own upstream
specs on one sim. Each row's calls are streamed, as a caller of ``laneway
serve`` makes them, on the schedule of ``laneway.chaos.fault_run`` (the
flapping series beside the other rows, those one after another), and the
table shows what each caller got. At scale 1 the run takes about 80 s.

Below scale 1 the health half-life (60 s; no config field sets it) is scaled
with every other duration, so a shrunk outage is judged as the real one is.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import uvicorn

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.chaos.asking import ask
from laneway.chaos.fault_report import RowResult
from laneway.chaos.fault_run import Report, row_runner, run_rows
from laneway.chaos.faults import lane_body
from laneway.config.models import LanewayConfig
from laneway.policy.health import HealthPolicy
from laneway.server import Gateway
from laneway.serving.settings import uvicorn_config
from laneway.sim import FAULTS, FaultScenario, Specs, refusing_port

STARTUP_TIMEOUT = 10.0
LOOPBACK = "127.0.0.1"
WARM_LANE = "warm-up"
"""A lane on a healthy upstream, called once before the rows so none pays the first call's
set-up (connections, lazy imports) in its time to answer."""


def select_faults(wanted: Sequence[str]) -> list[FaultScenario]:
    """The fault rows named in ``wanted`` (all when it is empty), in table order.

    Raises:
        ValueError: a name matches no row.
    """
    keys = [scenario.key for scenario in FAULTS]
    unknown = [name for name in wanted if name not in keys]
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(keys)}")
    return [scenario for scenario in FAULTS if not wanted or scenario.key in wanted]


async def run_faults(
    scenarios: Sequence[FaultScenario], sim_url: str, scale: float, report: Report
) -> list[RowResult]:
    """Run the rows at once through one gateway; results in the rows' order."""
    run = secrets.token_hex(3)
    with refusing_port(LOOPBACK) as port:
        specs = {s.key: s.specs(scale, run) for s in scenarios}
        refused = f"http://{LOOPBACK}:{port}/v1"
        gateway = _gateway(scenarios, specs, sim_url, refused, scale, run)
        async with _served(gateway) as url, aiohttp.ClientSession() as session:
            await ask(session, url, WARM_LANE, STARTUP_TIMEOUT, time.monotonic())
            row = row_runner(session, url, sim_url, specs, scale)
            return await run_rows(scenarios, row, scale, report)


def _gateway(
    scenarios: Sequence[FaultScenario],
    specs: dict[str, Specs],
    sim_url: str,
    refused: str,
    scale: float,
    run: str,
) -> Gateway:
    """One gateway with every row's lane, and a plain lane that warms it up first."""

    def url(spec: str | None) -> str:
        return refused if spec is None else f"{sim_url}/b/{spec}/v1"

    lanes: dict[str, Any] = {
        s.key: lane_body(s, url(specs[s.key].primary), url(specs[s.key].fallback), scale)
        for s in scenarios
    }
    warm = {"base_url": url(f"id=warm-{run}"), "model": "sim-model"}
    lanes[WARM_LANE] = {"sources": [warm]}
    document = {"lanes": lanes, "telemetry": {"url": "none"}, "cache": {"url": ":memory:"}}
    config = LanewayConfig.model_validate(document)
    engine = build_engine(config, {})
    half_life = HealthPolicy().half_life * scale
    for lane in engine.lanes.values():
        lane.health = HealthPolicy(half_life=half_life)
    return gateway_over(config, engine, {})


@asynccontextmanager
async def _served(gateway: Gateway) -> AsyncIterator[str]:
    """Serve ``gateway`` on a free loopback port in this loop; yields its chat URL."""
    server = uvicorn.Server(uvicorn_config(gateway, host=LOOPBACK, port=0, drain_timeout=1.0))
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(STARTUP_TIMEOUT):
            while not server.started:
                if task.done():
                    raise RuntimeError("the gateway exited during start-up")
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{LOOPBACK}:{port}/v1/chat/completions"
    finally:
        server.should_exit = True
        await task
