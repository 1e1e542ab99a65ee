"""The sim's fault scripts for a primary: scaled time, resets, silence, outages, prefills."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Awaitable
from typing import Any

import aiohttp
import orjson
import pytest

from laneway.core.transport import HttpRequest, HttpResponse
from laneway.sim import FAULTS, RunningSim, fault_scenario, parse_spec, refusing_port
from laneway.sim._answers import plan_completion
from laneway.sim._stream import DONE_EVENT, stream_steps
from tests.helpers import Upstream, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

HELLO = [{"role": "user", "content": "hello"}]


def chat_url(sim: Upstream, spec: str) -> str:
    return f"{sim.base_url}/b/{spec}/v1/chat/completions"


async def post(sim: RunningSim, spec: str, body: dict[str, Any]) -> tuple[int, Any, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(chat_url(sim, spec), json=body) as r,
    ):
        return r.status, r.headers, await r.read()


def test_scale_multiplies_every_duration() -> None:
    behaviour = parse_spec(
        "sleep=2,ttfb=20,delay=1,down_for=60,retry_after=2,retry_after_ms=500,scale=0.1"
    )
    assert behaviour.sleep == pytest.approx(0.2)
    assert behaviour.ttfb == pytest.approx(2.0)
    assert behaviour.delay == pytest.approx(0.1)
    assert behaviour.down_for == pytest.approx(6.0)
    assert (behaviour.retry_after, behaviour.retry_after_ms) == ("0.2", "50")


def test_scale_must_be_positive() -> None:
    with pytest.raises(ValueError, match="scale=0"):
        parse_spec("scale=0")


def test_end_without_done_ends_after_the_final_chunk() -> None:
    behaviour = parse_spec("end_without_done,chunks=2")
    completion = plan_completion(behaviour, {"messages": HELLO}, number=1, created=0)
    steps = [step for step in stream_steps(behaviour, completion, True) if isinstance(step, bytes)]
    assert len(steps) == len(list(stream_steps(behaviour, completion, True)))
    assert DONE_EVENT not in steps
    assert b'"usage"' in steps[-1]


async def test_reset_aborts_the_connection(sim: RunningSim) -> None:
    spec = unique_spec("reset")
    with pytest.raises(aiohttp.ClientOSError, match="reset"):
        await post(sim, spec, {"messages": HELLO, "stream": True})
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response,
    ):
        assert (await response.json())["count"] == 1


def virtual_post(vsim: VirtualSim, spec: str, body: dict[str, Any]) -> Awaitable[HttpResponse]:
    """POST ``body`` to the chat endpoint of the in-process sim, in its virtual time."""
    headers = {"content-type": "application/json"}
    request = HttpRequest("POST", chat_url(vsim, spec), headers, orjson.dumps(body))
    return vsim.transport.send(request)


@in_virtual_time
async def test_no_headers_holds_the_request_until_the_client_leaves(vsim: VirtualSim) -> None:
    started = vsim.clock.now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await virtual_post(vsim, unique_spec("no_headers"), {"messages": HELLO, "stream": True})
    assert vsim.clock.now() - started == pytest.approx(0.3), "held until the client left"


@in_virtual_time
async def test_down_for_fails_from_the_first_hit_then_heals(vsim: VirtualSim) -> None:
    spec = unique_spec("down_for=3,scale=0.1")
    first = await virtual_post(vsim, spec, {"messages": HELLO})
    await asyncio.sleep(0.35)
    second = await virtual_post(vsim, spec, {"messages": HELLO})
    assert (first.status, second.status) == (503, 200)


async def test_refusing_port_refuses() -> None:
    with refusing_port() as port:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientConnectorError):
                await session.get(f"http://127.0.0.1:{port}/v1/models")


def test_every_scenario_has_valid_specs_at_any_scale() -> None:
    for scenario in FAULTS:
        specs = scenario.specs(0.1, "r1")
        for spec in (specs.primary, specs.fallback):
            if spec is not None:
                behaviour = parse_spec(spec)
                assert behaviour.id is not None and behaviour.id.startswith("r1-")
    assert fault_scenario("connection_refused").specs().primary is None
    assert parse_spec(fault_scenario("slow_first_token").specs(0.1).primary or "").ttfb == 2.0
    with pytest.raises(KeyError):
        fault_scenario("nope")


@pytest.mark.parametrize("n", [9223372036854775808, 129, 0])
async def test_an_n_out_of_bounds_is_a_400_before_any_answer_is_written(sim: RunningSim, n) -> None:
    """The issue's n=2**63 once grew the sim to 23.8 GB; now a 400 naming n, at once."""
    body = b'{"messages":[{"role":"user","content":"hi"}],"n":%d}' % n
    async with (
        aiohttp.ClientSession() as session,
        session.post(chat_url(sim, unique_spec("")), data=body) as r,
    ):
        assert r.status == 400 and "n must be" in (await r.json())["error"]["message"]


async def test_an_n_within_bounds_writes_that_many_answers(sim: RunningSim) -> None:
    status, _, body = await post(sim, unique_spec(""), {"messages": HELLO, "n": 128})
    assert status == 200 and len(orjson.loads(body)["choices"]) == 128


def test_laneway_sim_says_where_it_listens_and_when_it_stops() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "laneway", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("laneway sim: listening on http://127.0.0.1:")
        assert "/v1beta for gemini" in first
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert "laneway sim: stopping" in out
