"""A client that leaves cancels its engine call (and the upstream request) at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import orjson
import pytest

from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import (
    HELLO,
    Records,
    RunningGateway,
    config,
    serve_gateway,
    source,
    wait_until,
)

RECORDS = Records()


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes = {
        "long_stream": {"sources": [source(sim, unique_spec("chunks=50,delay=0.1"))]},
        "slow": {"sources": [source(sim, unique_spec("sleep=5"))]},
    }
    with serve_gateway(config(lanes), observers=[RECORDS]) as running:
        yield running


async def test_leaving_mid_stream_cancels_the_call(gw, http) -> None:
    body = orjson.dumps({"model": "long_stream", "messages": HELLO, "stream": True})
    async with http.post(f"{gw.v1}/chat/completions", data=body) as response:
        first = await response.content.readuntil(b"\n\n")
        assert first.startswith(b"data: {")
        assert gw.gateway.in_flight == 1
        response.close()
    await wait_until(lambda: gw.gateway.in_flight == 0, timeout=1.0)
    record = next(r for r in RECORDS.records if r.lane == "long_stream")
    assert record.error == "cancelled" and record.latency < 2.0


async def test_leaving_a_plain_call_cancels_it(gw, http) -> None:
    body = orjson.dumps({"model": "slow", "messages": HELLO})
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await http.post(f"{gw.v1}/chat/completions", data=body)
    await wait_until(lambda: gw.gateway.in_flight == 0, timeout=1.0)
    record = next(r for r in RECORDS.records if r.lane == "slow")
    assert record.error == "cancelled" and record.latency < 2.0
