"""Run one scenario's load through ``Laneway`` in this process (one replica).

Used in-process by the runner and, for the Redis scenario, by each replica
process (``laneway.chaos.replica``), so both replicas run exactly this code.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

from laneway.chaos.lanes import lane_config
from laneway.chaos.load import offer
from laneway.chaos.metrics import SeenCall
from laneway.chaos.scenarios import Scenario
from laneway.chaos.upstream import clock_offset
from laneway.client.laneway import Laneway
from laneway.core.errors import CallFailed
from laneway.state import FallbackStore

MESSAGES = [{"role": "user", "content": "chaos scenario: say hello"}]


@dataclass(frozen=True, slots=True)
class ReplicaRun:
    """One replica's calls, and how often its shared state was unreachable."""

    calls: list[SeenCall]
    outages: int = 0


async def drive(scenario: Scenario, sim_url: str, state_url: str | None = None) -> ReplicaRun:
    """Offer the scenario's load to one ``Laneway`` built from its lane config, in real time."""
    config = lane_config(scenario, sim_url, state_url)
    async with Laneway.from_settings(config, environ={}) as lw:
        async with aiohttp.ClientSession() as session:
            offset = await clock_offset(session, sim_url, lw.engine.clock)
        return await offer_to(lw, scenario, offset)


async def offer_to(lw: Laneway, scenario: Scenario, offset: float) -> ReplicaRun:
    """Offer the load to ``lw``, timed on its engine's clock (sim time = its time + ``offset``).

    The clock is the one ``laneway.app`` wired into the engine, so a library
    built on a ``VirtualClock`` (``tests/chaos``) runs a whole scenario in
    virtual time, schedule and records included.
    """

    async def call() -> str | None:
        try:
            await lw.chat(scenario.lane, MESSAGES)
        except CallFailed as exc:
            return exc.code
        return None

    calls = await offer(scenario.load, call, offset, lw.engine.clock)
    store = lw.engine.loop.admission.store
    outages = store.outages if isinstance(store, FallbackStore) else 0
    return ReplicaRun(calls, outages)
