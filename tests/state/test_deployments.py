"""Deployments shared by lanes: one quota, one breaker, whichever lane calls them.

Hits are counted at the simulator: what the upstream received, not what laneway
believes it sent. Two engines on one Redis store stand for two replicas.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import aiohttp
from redis.asyncio import Redis

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import CallFailed, DeadlineExceeded
from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.server.support import hits
from tests.state.conftest import REDIS_URL, delete_keys
from tests.virtual import VirtualSim, in_virtual_time

HELLO = [{"role": "user", "content": "hello"}]
RPM = 4
DEADLINE = "750ms"
"""What the calls over the quota wait out. An admitted call takes 40-60 ms on Redis and the
loopback sim with the 2-core machine at load 11 (measured): over ten times that is left."""


def shared(
    deployments: dict[str, dict[str, Any]],
    lanes: dict[str, list[dict[str, Any]]],
    **top: Any,
) -> LanewayConfig:
    """Lanes (by their sources) over ``deployments``; calls give up after ``DEADLINE``."""
    bodies = {name: {"deadline": DEADLINE, "sources": s} for name, s in lanes.items()}
    return LanewayConfig.model_validate({"deployments": deployments, "lanes": bodies, **top})


async def calls(lw: Laneway, lanes: Sequence[str], each: int) -> list[object]:
    jobs = [lw.chat(lane, HELLO) for lane in lanes for _ in range(each)]
    return list(await asyncio.gather(*jobs, return_exceptions=True))


def tally(results: Sequence[object]) -> tuple[int, int]:
    ok = sum(not isinstance(r, BaseException) for r in results)
    return ok, sum(isinstance(r, DeadlineExceeded) for r in results)


async def count(sim: RunningSim, spec: str) -> int:
    async with aiohttp.ClientSession() as http:
        return await hits(http, sim, spec)


@in_virtual_time
async def test_one_deployment_in_two_lanes_never_exceeds_its_rpm(vsim: VirtualSim) -> None:
    spec = unique_spec("ok")
    deployment = {"base_url": sim_url(vsim, spec), "model": "sim-model", "rpm": RPM}
    config = shared(
        {"acct": deployment}, {"a": [{"deployment": "acct"}], "b": [{"deployment": "acct"}]}
    )
    async with vsim.laneway(config) as lw:
        results = await calls(lw, ["a", "b"], RPM)
    assert tally(results) == (RPM, RPM)
    assert vsim.hits(spec) == RPM


async def test_two_replicas_on_redis_share_a_deployments_rpm(
    sim: RunningSim, redis_client: Redis
) -> None:
    spec = unique_spec("ok")
    name = f"dep-{uuid.uuid4().hex[:10]}"
    deployment = {"base_url": sim_url(sim, spec), "model": "sim-model", "rpm": RPM}
    lanes = {"a": [{"deployment": name}], "b": [{"deployment": name}]}
    # Redis may answer slower than the default 0.5 s bound on a loaded 2-core host; read as an
    # outage, each replica would then serve its own share (seen once: 8 answered, not 4).
    config = shared({name: deployment}, lanes, state={"url": REDIS_URL, "timeout": "5s"})
    try:
        async with (
            Laneway.from_settings(config, environ={}) as one,
            Laneway.from_settings(config, environ={}) as two,
        ):
            both = await asyncio.gather(calls(one, ["a", "b"], 3), calls(two, ["b", "a"], 3))
    finally:
        await delete_keys(redis_client, f"laneway:{{deployments}}:deployment:{name}:*")
    assert tally([*both[0], *both[1]]) == (RPM, 12 - RPM)
    assert await count(sim, spec) == RPM


@in_virtual_time
async def test_a_quota_group_holds_several_deployments_to_one_rpm(vsim: VirtualSim) -> None:
    specs = [unique_spec("ok"), unique_spec("ok")]
    deployments = {
        f"model-{i}": {"base_url": sim_url(vsim, spec), "model": f"m{i}", "quota_group": "acct"}
        for i, spec in enumerate(specs)
    }
    lanes = {"a": [{"deployment": "model-0"}], "b": [{"deployment": "model-1"}]}
    config = shared(deployments, lanes, quota_groups={"acct": {"rpm": RPM}})
    async with vsim.laneway(config) as lw:
        results = await calls(lw, ["a", "b"], RPM)
    assert tally(results) == (RPM, RPM)
    assert sum(vsim.hits(spec) for spec in specs) == RPM


async def test_a_breaker_opened_through_one_lane_is_seen_by_the_other(sim: RunningSim) -> None:
    down, ok = unique_spec("status=500"), unique_spec("ok")
    breaker = {"failures": 2, "window": "30s", "cooldown": "30s"}
    flaky = {"base_url": sim_url(sim, down), "model": "sim-model", "breaker": breaker}
    spare: dict[str, Any] = {
        "base_url": sim_url(sim, ok),
        "model": "sim-model",
        "name": "spare",
        "priority": 1,
    }
    lanes = {"a": [{"deployment": "flaky"}], "b": [{"deployment": "flaky"}, spare]}
    async with Laneway.from_settings(shared({"flaky": flaky}, lanes), environ={}) as lw:
        for _ in range(2):
            failed = (await calls(lw, ["a"], 1))[0]
            assert isinstance(failed, CallFailed)
        answer = await lw.chat("b", HELLO)
    assert answer.source == "spare"
    assert [a.source for a in answer.attempts] == ["spare"]
    assert await count(sim, down) == 2
