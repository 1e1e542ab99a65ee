"""Streaming through the engine: retried before content, honest after it."""

from __future__ import annotations

import time

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import StreamInterrupted, UpstreamFailed
from tests.helpers import one_lane, sim_url, unique_spec

MESSAGES = [{"role": "user", "content": "hello"}]


async def collect(lw: Laneway, **kw):
    stream = lw.chat_stream("lane", MESSAGES, **kw)
    chunks = [chunk async for chunk in stream]
    return stream, chunks


async def test_stream_delivers_content_and_usage(sim) -> None:
    async with Laneway.from_settings(one_lane(sim, unique_spec("chunks=3")), environ={}) as lw:
        stream, chunks = await collect(lw)
    assert stream.content
    assert chunks[-1].usage is not None
    assert stream.usage is not None and stream.usage.completion_tokens is not None
    assert [a.outcome for a in stream.attempts] == ["ok"]


async def test_stream_without_usage_reports_none(sim) -> None:
    async with Laneway.from_settings(one_lane(sim, unique_spec("nousage")), environ={}) as lw:
        stream, _ = await collect(lw)
    assert stream.usage is None


async def test_cut_before_content_is_retried(sim) -> None:
    config = one_lane(sim, unique_spec("cut_after=0"), retries=1, retry_on=["cut"])
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await collect(lw)
    assert [a.outcome for a in err.value.attempts] == ["cut", "cut"]


async def test_cut_after_content_is_never_a_clean_end(sim) -> None:
    config = one_lane(sim, unique_spec("cut_after=2"))
    async with Laneway.from_settings(config, environ={}) as lw:
        stream = lw.chat_stream("lane", MESSAGES)
        with pytest.raises(StreamInterrupted):
            async for _ in stream:
                pass
    assert stream.content
    assert stream.attempts[-1].outcome == "cut"


async def test_first_byte_timeout_fails_the_attempt(sim) -> None:
    config = one_lane(sim, unique_spec("ttfb=2"), first_byte_timeout="200ms", deadline="5s")
    started = time.monotonic()
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamFailed, match="first_byte_timeout"):
            await collect(lw)
    assert time.monotonic() - started < 1.0


async def test_idle_timeout_interrupts_a_stalled_stream(sim) -> None:
    config = one_lane(sim, unique_spec("stall_after=2"), idle_timeout="200ms")
    started = time.monotonic()
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(StreamInterrupted, match="idle_timeout"):
            await collect(lw)
    assert 0.2 <= time.monotonic() - started < 1.0


async def test_missing_done_does_not_hold_the_caller(sim) -> None:
    config = one_lane(sim, unique_spec("nodone"))
    started = time.monotonic()
    async with Laneway.from_settings(config, environ={}) as lw:
        stream, _ = await collect(lw)
    assert time.monotonic() - started < 1.0
    assert stream.usage is not None


async def test_malformed_event_is_skipped_and_counted(sim) -> None:
    config = one_lane(sim, unique_spec("malformed=1"))
    async with Laneway.from_settings(config, environ={}) as lw:
        stream, _ = await collect(lw)
    assert stream.malformed_events == 1
    assert stream.content


async def test_reasoning_deltas_arrive(sim) -> None:
    config = one_lane(sim, unique_spec("reasoning"))
    async with Laneway.from_settings(config, environ={}) as lw:
        stream, chunks = await collect(lw)
        response = await lw.chat("lane", MESSAGES)
    assert any(c.reasoning_content for c in chunks)
    assert stream.usage is not None and stream.usage.reasoning_tokens
    assert response.reasoning_content and response.usage.reasoning_tokens


async def test_cut_stream_continues_on_a_prefill_source(sim) -> None:
    first = {"base_url": sim_url(sim, unique_spec("cut_after=2")), "model": "a", "name": "a"}
    spec = unique_spec("ok")
    second = {"base_url": sim_url(sim, spec), "model": "b", "name": "b", "accepts_prefill": True}
    config = LanewayConfig.model_validate(
        {"lanes": {"lane": {"continue_on_cut": True, "sources": [first, second]}}}
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        stream, _ = await collect(lw)
    assert stream.source == "b"
    assert [(a.outcome, a.continuation) for a in stream.attempts] == [("cut", False), ("ok", True)]
    assert stream.usage is not None
    assert stream.usage.source == "estimated", "the cut answer's tokens are an estimate"
