"""Two laneway processes on one Redis hold one source's ``rpm`` between them.

The other tests of shared state run two engines in one process; this one is the
test that the state is shared between processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

import aiohttp

from laneway import Laneway
from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.state.conftest import REDIS_URL, delete_keys
from tests.state.replica import calls_report, replica_config

REPLICA = Path(__file__).with_name("replica.py")
RPM = 4
CALLS_EACH = 4
DEADLINE = "750ms"
"""What the calls over the quota wait out. An admitted call takes 40-60 ms on Redis and the
loopback sim with the 2-core machine at load 11 (measured): over ten times that is left."""


async def hits(sim: RunningSim, spec: str) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response,
    ):
        return int((await response.json())["count"])


async def other_replica(base_url: str, lane: str, workdir: Path) -> asyncio.subprocess.Process:
    """The replica in a child process, its lane open and waiting for the word to call."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(REPLICA),
        REDIS_URL,
        base_url,
        lane,
        str(RPM),
        str(CALLS_EACH),
        DEADLINE,
        cwd=workdir,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    ready = await asyncio.wait_for(process.stdout.readline(), timeout=30)
    if ready != b"ready\n":
        raise AssertionError(f"the replica did not start: {await process.stderr.read()!r}")
    return process


async def report_of(process: asyncio.subprocess.Process) -> dict[str, int]:
    """Tell the child replica to call, and read its report."""
    out, err = await asyncio.wait_for(process.communicate(b"go\n"), timeout=30)
    assert process.returncode == 0, err.decode()
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


async def test_two_processes_share_one_rpm_quota(sim, redis_client, tmp_path) -> None:
    """This process is one replica, a child process the other; both start calling at once."""
    spec = unique_spec("ok")
    lane = f"replicas-{uuid.uuid4().hex[:10]}"
    base_url = sim_url(sim, spec)
    config = replica_config(REDIS_URL, base_url, lane, RPM, DEADLINE)
    try:
        async with Laneway.from_settings(config, environ={}) as here:
            other = await other_replica(base_url, lane, tmp_path)
            reports = await asyncio.gather(calls_report(here, lane, CALLS_EACH), report_of(other))
    finally:
        await delete_keys(redis_client, f"laneway:{{{lane}}}:*")
    assert sum(r["ok"] for r in reports) == RPM
    assert sum(r["deadline"] for r in reports) == 2 * CALLS_EACH - RPM
    assert all(r["outages"] == 0 for r in reports), "both replicas used Redis throughout"
    assert await hits(sim, spec) == RPM
