"""Hedged streams in virtual time: the first first token wins (issue 26).

A stream's attempt ends at its first token, so a hedge races the time to
first token: started ``after`` the first attempt's start on another source,
the first of the two to produce a token wins and the other is cancelled at
once, its connection closed; the caller's text comes from the winner alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.engine.chain_stream import ChatStream
from laneway.engine.recording import RACE_LOSER_COST
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]
ANSWER = "sim answer w2 w3 w4"
"""The simulator's whole answer to ``MESSAGES`` (``chunks`` unset)."""


def two_sources(
    vsim: VirtualSim, first: str, second: str, rpm: int | None = None, **lane: Any
) -> Laneway:
    """``rpm``: the second source's."""
    sources = [
        {"name": "first", "provider": "openai", "base_url": sim_url(vsim, first), "priority": 0},
        {"name": "second", "provider": "openai", "base_url": sim_url(vsim, second), "priority": 1},
    ]
    if rpm is not None:
        sources[1]["rpm"] = rpm
    for source in sources:
        source["model"] = "sim-model"
    settings = {"lanes": {"lane": {"sources": sources, **lane}}}
    return vsim.laneway(LanewayConfig.model_validate(settings))


async def streamed(vsim: VirtualSim, lw: Laneway) -> tuple[ChatStream, float, float]:
    """One whole stream: it, its time to first token and its whole time."""
    started = vsim.clock.now()
    stream = lw.chat_stream("lane", MESSAGES)
    first: float | None = None
    async for chunk in stream:
        if first is None and chunk.content:
            first = vsim.clock.now() - started
    assert first is not None
    return stream, first, vsim.clock.now() - started


@in_virtual_time
async def test_a_stream_slow_to_its_first_token_is_raced_and_the_hedge_wins(
    vsim: VirtualSim,
) -> None:
    slow, fast = unique_spec("ttfb=5"), unique_spec("ok")
    async with two_sources(vsim, slow, fast, hedge={"after": "200ms"}) as lw:
        stream, first, whole = await streamed(vsim, lw)
        scraped = lw.metrics.render()[0].decode()
    assert first == pytest.approx(0.2) and whole == pytest.approx(0.2)
    assert stream.content == ANSWER and stream.source == "second"
    assert [a.outcome for a in stream.attempts] == ["cancelled", "hedge_won"]
    assert stream.attempts[0].usage is None  # the loser's usage is unknown, never 0
    assert stream.usage is not None and stream.usage.source == "provider"
    assert stream.cost_unknown == RACE_LOSER_COST
    assert (vsim.hits(slow), vsim.hits(fast)) == (1, 1)
    assert 'laneway_hedges_total{lane="lane",outcome="hedge_won"} 1.0' in scraped
    assert 'laneway_hedges_total{lane="lane",outcome="cancelled"} 1.0' in scraped


@in_virtual_time
async def test_no_hedge_on_a_stream_whose_first_token_comes_in_time(vsim: VirtualSim) -> None:
    first, second = unique_spec("ttfb=0.1"), unique_spec("ok")
    async with two_sources(vsim, first, second, hedge={"after": "200ms"}) as lw:
        for _ in range(5):
            stream, _, _ = await streamed(vsim, lw)
            assert [a.outcome for a in stream.attempts] == ["ok"]
            assert stream.cost_unknown != RACE_LOSER_COST
    assert (vsim.hits(first), vsim.hits(second)) == (5, 0)


@in_virtual_time
async def test_the_first_stream_wins_when_its_token_comes_first(vsim: VirtualSim) -> None:
    first, second = unique_spec("ttfb=0.3"), unique_spec("ttfb=5")
    async with two_sources(vsim, first, second, hedge={"after": "200ms"}) as lw:
        stream, ttft, _ = await streamed(vsim, lw)
    assert ttft == pytest.approx(0.3)
    assert stream.content == ANSWER and stream.source == "first"
    assert [a.outcome for a in stream.attempts] == ["hedge_lost", "ok"]
    assert (vsim.hits(first), vsim.hits(second)) == (1, 1)


@in_virtual_time
async def test_the_budget_holds_the_share_of_hedged_streams(vsim: VirtualSim) -> None:
    slow, fast = unique_spec("ttfb=1"), unique_spec("ok")
    async with two_sources(vsim, slow, fast, hedge={"after": "200ms", "max_share": 0.1}) as lw:
        streams = [(await streamed(vsim, lw))[0] for _ in range(20)]
    won = sum("hedge_won" in [a.outcome for a in s.attempts] for s in streams)
    assert won == vsim.hits(fast) == 3  # 1 + 0.1 x 20 calls of the minute
    assert vsim.hits(slow) == 20


@in_virtual_time
async def test_a_hedge_goes_only_to_another_source_that_is_admitted(vsim: VirtualSim) -> None:
    """The second source takes one request a minute: the second slow stream has no hedge,
    and none goes back to the first source."""
    slow, fast = unique_spec("ttfb=1"), unique_spec("ok")
    hedge = {"after": "200ms", "max_share": 1.0}
    async with two_sources(vsim, slow, fast, rpm=1, hedge=hedge) as lw:
        hedged, _, _ = await streamed(vsim, lw)
        alone, ttft, _ = await streamed(vsim, lw)
    assert [a.outcome for a in hedged.attempts] == ["cancelled", "hedge_won"]
    assert [a.outcome for a in alone.attempts] == ["ok"] and ttft == pytest.approx(1.0)
    assert (vsim.hits(slow), vsim.hits(fast)) == (2, 1)


@in_virtual_time
async def test_first_token_after_20s_with_a_healthy_fallback_answers_within_3s(
    vsim: VirtualSim,
) -> None:
    """The standard fault, with ``first_byte_timeout: 10s``: a hedge after 1 s, not the timeout."""
    silent, healthy = unique_spec("ttfb=20"), unique_spec("ok")
    hedge = {"after": "1s", "max_share": 1.0}
    async with two_sources(vsim, silent, healthy, first_byte_timeout="10s", hedge=hedge) as lw:
        stream, _, whole = await streamed(vsim, lw)
    assert whole == pytest.approx(1.0) and whole <= 3
    assert stream.content == ANSWER
