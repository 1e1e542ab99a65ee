"""Streaming through the engine: retried before content, honest after it.

The timed faults (first byte, idle, a missing ``[DONE]``) run in virtual
time against the in-process simulator, with exact timings; one plain stream
and one stalled stream also run over loopback, end to end.
"""

from __future__ import annotations

import time

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import StreamInterrupted, UpstreamFailed
from laneway.sim import RunningSim
from tests.helpers import one_lane, sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]
LOADED = 0.5
"""Upper slack of a loopback timing on a loaded machine."""


async def collect(lw: Laneway, **kw):
    stream = lw.chat_stream("lane", MESSAGES, **kw)
    chunks = [chunk async for chunk in stream]
    return stream, chunks


async def test_stream_delivers_content_and_usage_over_loopback(sim: RunningSim) -> None:
    async with Laneway.from_settings(one_lane(sim, unique_spec("chunks=3")), environ={}) as lw:
        stream, chunks = await collect(lw)
    assert stream.content
    assert chunks[-1].usage is not None
    assert stream.usage is not None and stream.usage.completion_tokens is not None
    assert [a.outcome for a in stream.attempts] == ["ok"]


async def test_idle_timeout_interrupts_a_stalled_stream_over_loopback(sim: RunningSim) -> None:
    config = one_lane(sim, unique_spec("stall_after=2"), idle_timeout="200ms")
    started = time.monotonic()
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(StreamInterrupted, match="idle_timeout"):
            await collect(lw)
    assert 0.2 <= time.monotonic() - started < 0.2 + LOADED


@in_virtual_time
async def test_stream_without_usage_reports_none(vsim: VirtualSim) -> None:
    async with vsim.laneway(one_lane(vsim, unique_spec("nousage"))) as lw:
        stream, _ = await collect(lw)
    assert stream.usage is None


@in_virtual_time
async def test_cut_before_content_is_retried(vsim: VirtualSim) -> None:
    config = one_lane(vsim, unique_spec("cut_after=0"), retries=1, retry_on=["cut"])
    async with vsim.laneway(config) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await collect(lw)
    assert [a.outcome for a in err.value.attempts] == ["cut", "cut"]


@in_virtual_time
async def test_cut_after_content_is_never_a_clean_end(vsim: VirtualSim) -> None:
    async with vsim.laneway(one_lane(vsim, unique_spec("cut_after=2"))) as lw:
        stream = lw.chat_stream("lane", MESSAGES)
        with pytest.raises(StreamInterrupted):
            async for _ in stream:
                pass
    assert stream.content
    assert stream.attempts[-1].outcome == "cut"


@in_virtual_time
async def test_first_byte_timeout_fails_the_attempt(vsim: VirtualSim) -> None:
    config = one_lane(vsim, unique_spec("ttfb=20"), first_byte_timeout="2s", deadline="30s")
    async with vsim.laneway(config) as lw:
        started = vsim.clock.now()
        with pytest.raises(UpstreamFailed, match="first_byte_timeout") as err:
            await collect(lw)
        assert vsim.clock.now() - started == pytest.approx(2.0)
    assert [(a.outcome, a.elapsed) for a in err.value.attempts] == [("timeout", 2.0)]


@in_virtual_time
async def test_idle_timeout_interrupts_a_stalled_stream(vsim: VirtualSim) -> None:
    config = one_lane(vsim, unique_spec("stall_after=2"), idle_timeout="5s", deadline="60s")
    async with vsim.laneway(config) as lw:
        started = vsim.clock.now()
        with pytest.raises(StreamInterrupted, match="idle_timeout") as err:
            await collect(lw)
        assert vsim.clock.now() - started == pytest.approx(5.0)
    assert err.value.attempts[-1].outcome == "timeout"


@in_virtual_time
async def test_missing_done_does_not_hold_the_caller(vsim: VirtualSim) -> None:
    """The final usage chunk ends the answer: the caller waits no grace for a ``[DONE]``."""
    async with vsim.laneway(one_lane(vsim, unique_spec("nodone"), idle_timeout="30s")) as lw:
        started = vsim.clock.now()
        stream, _ = await collect(lw)
        assert vsim.clock.now() - started < 30
    assert stream.usage is not None


@in_virtual_time
async def test_malformed_event_is_skipped_and_counted(vsim: VirtualSim) -> None:
    async with vsim.laneway(one_lane(vsim, unique_spec("malformed=1"))) as lw:
        stream, _ = await collect(lw)
    assert stream.malformed_events == 1
    assert stream.content


@in_virtual_time
async def test_reasoning_deltas_arrive(vsim: VirtualSim) -> None:
    async with vsim.laneway(one_lane(vsim, unique_spec("reasoning"))) as lw:
        stream, chunks = await collect(lw)
        response = await lw.chat("lane", MESSAGES)
    assert any(c.reasoning_content for c in chunks)
    assert stream.usage is not None and stream.usage.reasoning_tokens
    assert response.reasoning_content and response.usage.reasoning_tokens


@in_virtual_time
async def test_cut_stream_continues_on_a_prefill_source(vsim: VirtualSim) -> None:
    first = {"base_url": sim_url(vsim, unique_spec("cut_after=2")), "model": "a", "name": "a"}
    spec = unique_spec("ok")
    second = {"base_url": sim_url(vsim, spec), "model": "b", "name": "b", "accepts_prefill": True}
    config = LanewayConfig.model_validate(
        {"lanes": {"lane": {"continue_on_cut": True, "sources": [first, second]}}}
    )
    async with vsim.laneway(config) as lw:
        stream, _ = await collect(lw)
    assert stream.source == "b"
    assert [(a.outcome, a.continuation) for a in stream.attempts] == [("cut", False), ("ok", True)]
    assert stream.usage is not None
    assert stream.usage.source == "estimated", "the cut answer's tokens are an estimate"
