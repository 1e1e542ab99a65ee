"""Which source the next attempt goes to after a failure (issue 10, section 2's source rows).

The lane is the issue's: ``retries: 2`` on 429, 5xx, timeout and connect,
exponential backoff from 1 s, a 30 s ``attempt_timeout``, a priority-0
primary and a priority-1 fallback. The simulator runs in virtual time
(``tests.virtual``), so the issue's own numbers cost nothing and timings are
exact; refused and reset connections need real sockets and run over loopback.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import ContextLengthExceeded, UpstreamTimeout
from laneway.sim import RunningSim
from tests.engine.spy import sim_hits
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]
BACKOFF_BASE = 1.0
ATTEMPT_TIMEOUT = 30.0
LANE: dict[str, Any] = {
    "deadline": "120s",
    "attempt_timeout": f"{ATTEMPT_TIMEOUT:g}s",
    "retries": 2,
    "retry_on": [429, 500, 502, 503, 504, "timeout", "connect"],
    "backoff": {"kind": "exponential", "base": f"{BACKOFF_BASE:g}s", "cap": "8s"},
    "min_attempt": "50ms",
}


def config(primary_url: str, fallback_url: str) -> LanewayConfig:
    sources = [
        {"name": "primary", "base_url": primary_url, "model": "m", "priority": 0},
        {"name": "fallback", "base_url": fallback_url, "model": "m", "priority": 1},
    ]
    return LanewayConfig.model_validate({"lanes": {"lane": {**LANE, "sources": sources}}})


async def timed_chat(lw: Laneway, now: Any = time.monotonic) -> tuple[Any, float]:
    started = now()
    async with lw:
        response = await lw.chat("lane", MESSAGES)
    return response, now() - started


async def against_sim(vsim: VirtualSim, primary_fault: str) -> tuple[Any, float, tuple[int, int]]:
    """One call with the primary behaving as ``primary_fault`` and a healthy fallback.

    Returns the answer, the (virtual) time to it, and the requests each source received.
    """
    primary, fallback = unique_spec(primary_fault), unique_spec("ok")
    lw = vsim.laneway(config(sim_url(vsim, primary), sim_url(vsim, fallback)))
    response, elapsed = await timed_chat(lw, vsim.clock.now)
    return response, elapsed, (vsim.hits(primary), vsim.hits(fallback))


@in_virtual_time
async def test_one_429_with_retry_after_waits_and_retries_the_primary(vsim: VirtualSim) -> None:
    response, elapsed, hits = await against_sim(vsim, "fail_first=1,status=429,retry_after=2")
    assert response.source == "primary"
    assert [a.outcome for a in response.attempts] == ["429", "ok"]
    assert response.attempts[0].waited == pytest.approx(2.0)
    assert elapsed == pytest.approx(2.0)
    assert hits == (2, 0)


@pytest.mark.parametrize("header", ["retry_after=2", "no_retry_after"])
@in_virtual_time
async def test_429_every_time_ends_on_the_fallback_after_two_tries(
    vsim: VirtualSim, header: str
) -> None:
    response, elapsed, hits = await against_sim(vsim, f"status=429,{header}")
    assert response.source == "fallback"
    assert [a.source for a in response.attempts] == ["primary", "primary", "fallback"]
    assert elapsed == pytest.approx(2.0 if header == "retry_after=2" else BACKOFF_BASE)
    assert hits == (2, 1)


@in_virtual_time
async def test_one_500_then_healthy_is_answered_by_the_primary(vsim: VirtualSim) -> None:
    response, elapsed, hits = await against_sim(vsim, "fail_first=1,status=500")
    assert response.source == "primary"
    assert [a.outcome for a in response.attempts] == ["500", "ok"]
    assert elapsed == pytest.approx(BACKOFF_BASE)
    assert hits == (2, 0)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(1)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    writer.transport.abort()


@pytest.fixture
async def reset_url() -> AsyncIterator[str]:
    """A loopback server that resets every connection before answering."""
    server = await asyncio.start_server(_reset, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("fault", ["refused", "reset"])
async def test_a_refused_or_reset_connection_moves_to_the_fallback_at_once(
    sim: RunningSim, reset_url: str, fault: str
) -> None:
    primary_url = f"http://127.0.0.1:{closed_port()}/v1" if fault == "refused" else reset_url
    fallback = unique_spec("ok")
    lw = Laneway.from_settings(config(primary_url, sim_url(sim, fallback)), environ={})
    response, elapsed = await timed_chat(lw)
    assert response.source == "fallback"
    assert [a.outcome for a in response.attempts] == ["connect", "ok"]
    assert elapsed < BACKOFF_BASE, "no backoff before another source"
    assert await sim_hits(sim, fallback) == 1


@in_virtual_time
async def test_a_source_that_timed_out_is_not_tried_again_while_another_can_run(
    vsim: VirtualSim,
) -> None:
    """The fallback fails once with a 500: the call waits its backoff rather than go back
    to the primary that timed out."""
    primary = unique_spec("sleep=60")
    fallback = unique_spec("fail_first=1,status=500")
    lw = vsim.laneway(config(sim_url(vsim, primary), sim_url(vsim, fallback)))
    response, elapsed = await timed_chat(lw, vsim.clock.now)
    assert response.source == "fallback"
    assert [a.outcome for a in response.attempts] == ["timeout", "500", "ok"]
    assert response.attempts[0].elapsed == ATTEMPT_TIMEOUT
    assert response.attempts[0].waited == 0.0
    assert elapsed == pytest.approx(ATTEMPT_TIMEOUT + 2 * BACKOFF_BASE)  # the second retry's
    assert (vsim.hits(primary), vsim.hits(fallback)) == (1, 2)


@in_virtual_time
async def test_a_lone_source_that_timed_out_is_retried(vsim: VirtualSim) -> None:
    spec = unique_spec("sleep=60")
    sources = [{"base_url": sim_url(vsim, spec), "model": "m"}]
    lone = LanewayConfig.model_validate({"lanes": {"lane": {**LANE, "sources": sources}}})
    async with vsim.laneway(lone) as lw:
        started = vsim.clock.now()
        with pytest.raises(UpstreamTimeout, match="attempt_timeout") as err:
            await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
    assert [a.outcome for a in err.value.attempts] == ["timeout"] * 3
    assert elapsed == pytest.approx(3 * ATTEMPT_TIMEOUT + BACKOFF_BASE + 2 * BACKOFF_BASE)
    assert vsim.hits(spec) == 3


@in_virtual_time
async def test_context_length_moves_only_to_a_declared_larger_window(vsim: VirtualSim) -> None:
    """Without declared windows a too-long request is one request; never resent to the same."""
    primary, fallback = unique_spec("context_length"), unique_spec("ok")
    async with vsim.laneway(config(sim_url(vsim, primary), sim_url(vsim, fallback))) as lw:
        with pytest.raises(ContextLengthExceeded):
            await lw.chat("lane", MESSAGES)
    assert (vsim.hits(primary), vsim.hits(fallback)) == (1, 0)
