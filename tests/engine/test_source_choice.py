"""Which source the next attempt goes to after a failure (issue 10, section 2's source rows).

The lane is the issue's: ``retries: 2`` on 429, 5xx, timeout and connect,
exponential backoff, a priority-0 primary and a priority-1 fallback, against
the simulator over loopback. Times are scaled down (Retry-After 2 s -> 0.5 s,
backoff base 1 s -> 800 ms, attempt_timeout 30 s -> 400 ms); bounds that
matter are lower bounds and hit counts, upper bounds carry generous slack.
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

MESSAGES = [{"role": "user", "content": "hello"}]
SLACK = 0.4
BACKOFF_BASE = 0.8
LANE: dict[str, Any] = {
    "deadline": "10s",
    "attempt_timeout": "400ms",
    "retries": 2,
    "retry_on": [429, 500, 502, 503, 504, "timeout", "connect"],
    "backoff": {"kind": "exponential", "base": f"{BACKOFF_BASE}s", "cap": "2s"},
    "min_attempt": "50ms",
}


def lane(primary_url: str, fallback_url: str) -> Laneway:
    sources = [
        {"name": "primary", "base_url": primary_url, "model": "m", "priority": 0},
        {"name": "fallback", "base_url": fallback_url, "model": "m", "priority": 1},
    ]
    config = LanewayConfig.model_validate({"lanes": {"lane": {**LANE, "sources": sources}}})
    return Laneway.from_settings(config, environ={})


async def timed_chat(lw: Laneway) -> tuple[Any, float]:
    started = time.monotonic()
    async with lw:
        response = await lw.chat("lane", MESSAGES)
    return response, time.monotonic() - started


async def against_sim(sim: RunningSim, primary_fault: str) -> tuple[Any, float, tuple[int, int]]:
    """One call with the primary behaving as ``primary_fault`` and a healthy fallback.

    Returns the answer, the time to it, and the requests each source received.
    """
    primary, fallback = unique_spec(primary_fault), unique_spec("ok")
    response, elapsed = await timed_chat(lane(sim_url(sim, primary), sim_url(sim, fallback)))
    return response, elapsed, (await sim_hits(sim, primary), await sim_hits(sim, fallback))


async def test_one_429_with_retry_after_waits_and_retries_the_primary(sim) -> None:
    response, elapsed, hits = await against_sim(sim, "fail_first=1,status=429,retry_after=0.5")
    assert response.source == "primary"
    assert [a.outcome for a in response.attempts] == ["429", "ok"]
    assert 0.5 <= response.attempts[0].waited < 0.5 + SLACK
    assert 0.5 <= elapsed < 0.5 + 2 * SLACK
    assert hits == (2, 0)


@pytest.mark.parametrize("header", ["retry_after=0.2", "no_retry_after"])
async def test_429_every_time_ends_on_the_fallback_after_two_tries(sim, header) -> None:
    response, _, hits = await against_sim(sim, f"status=429,{header}")
    assert response.source == "fallback"
    assert [a.source for a in response.attempts] == ["primary", "primary", "fallback"]
    assert hits == (2, 1)


async def test_one_500_then_healthy_is_answered_by_the_primary(sim) -> None:
    response, elapsed, hits = await against_sim(sim, "fail_first=1,status=500")
    assert response.source == "primary"
    assert [a.outcome for a in response.attempts] == ["500", "ok"]
    assert elapsed >= BACKOFF_BASE
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
    sim, reset_url: str, fault: str
) -> None:
    primary_url = f"http://127.0.0.1:{closed_port()}/v1" if fault == "refused" else reset_url
    fallback = unique_spec("ok")
    response, elapsed = await timed_chat(lane(primary_url, sim_url(sim, fallback)))
    assert response.source == "fallback"
    assert [a.outcome for a in response.attempts] == ["connect", "ok"]
    assert elapsed < BACKOFF_BASE, "no backoff before another source"
    assert await sim_hits(sim, fallback) == 1


async def test_a_source_that_timed_out_is_not_tried_again_while_another_can_run(sim) -> None:
    """The fallback fails once with a 500: the call waits its backoff rather than go back
    to the primary that timed out."""
    primary = unique_spec("sleep=3")
    fallback = unique_spec("fail_first=1,status=500")
    response, elapsed = await timed_chat(lane(sim_url(sim, primary), sim_url(sim, fallback)))
    assert response.source == "fallback"
    assert [a.outcome for a in response.attempts] == ["timeout", "500", "ok"]
    assert 0.4 <= response.attempts[0].elapsed < 0.4 + SLACK
    assert response.attempts[0].waited < BACKOFF_BASE
    assert elapsed < 0.4 + 2 * BACKOFF_BASE + 2 * SLACK  # the second retry backs off 2x base
    assert (await sim_hits(sim, primary), await sim_hits(sim, fallback)) == (1, 2)


async def test_a_lone_source_that_timed_out_is_retried(sim) -> None:
    spec = unique_spec("sleep=3")
    config = LanewayConfig.model_validate(
        {"lanes": {"lane": {**LANE, "sources": [{"base_url": sim_url(sim, spec), "model": "m"}]}}}
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamTimeout, match="attempt_timeout") as err:
            await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in err.value.attempts] == ["timeout"] * 3
    assert await sim_hits(sim, spec) == 3


async def test_context_length_moves_only_to_a_declared_larger_window(sim) -> None:
    """Without declared windows a too-long request is one request; never resent to the same."""
    primary, fallback = unique_spec("context_length"), unique_spec("ok")
    async with lane(sim_url(sim, primary), sim_url(sim, fallback)) as lw:
        with pytest.raises(ContextLengthExceeded):
            await lw.chat("lane", MESSAGES)
    assert (await sim_hits(sim, primary), await sim_hits(sim, fallback)) == (1, 0)
