"""One contract, three wire formats: each adapter through the real engine and the sim.

Every test runs against OpenAI-compatible, Gemini and Anthropic upstreams
served by ``laneway sim`` over loopback, so an adapter that parses its own
wire format differently from the others fails here, not in production.
"""

from __future__ import annotations

import time

import pytest

from laneway import Laneway
from laneway.errors import (
    ContextLengthExceeded,
    DimensionMismatch,
    StreamInterrupted,
    UpstreamRejected,
)
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import WIRES, Wire, config, hits
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
ANSWER = "sim answer w2 w3 w4"
REASONING = "Considering the question carefully."


@pytest.fixture(params=WIRES, ids=lambda wire: wire.name)
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[w for w in WIRES if w.embeds], ids=lambda wire: wire.name)
def embed_wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


def lane(sim: RunningSim, wire: Wire, spec: str, **policy) -> Laneway:
    return Laneway.from_settings(config(sim, wire, spec, **policy), environ={})


async def stream(lw: Laneway):
    chat = lw.chat_stream("lane", MESSAGES)
    return chat, [chunk async for chunk in chat]


async def test_plain_chat(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("ok")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.content == ANSWER
    assert response.finish_reason == "stop"
    assert response.usage.source == "provider"
    assert response.usage.prompt_tokens is not None and response.usage.completion_tokens == 5
    assert response.raw["object"] == "chat.completion"
    assert response.raw["choices"][0]["message"]["content"] == ANSWER
    assert response.source == f"{wire.name}:sim-model"


async def test_streamed_chat_has_content_usage_and_finish(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("ok")) as lw:
        chat, chunks = await stream(lw)
    assert chat.content == ANSWER
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert chat.usage is not None and chat.usage.completion_tokens == 5
    forwarded = [c.raw for c in chunks if c.raw is not None]
    assert all(raw.get("object") == "chat.completion.chunk" for raw in forwarded)


async def test_missing_usage_is_unknown(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("nousage")) as lw:
        response = await lw.chat("lane", MESSAGES)
        chat, _ = await stream(lw)
    assert response.usage.prompt_tokens is None and not response.usage.known
    assert "usage" not in response.raw
    assert chat.usage is None


async def test_stream_ends_promptly_once_the_upstream_is_done(sim, wire) -> None:
    """Gemini sends no ``[DONE]``: the end of the body must end the stream at once."""
    async with lane(sim, wire, unique_spec("nousage")) as lw:
        started = time.monotonic()
        await stream(lw)
    assert time.monotonic() - started < 0.8  # below the 1 s wait for a usage chunk


async def test_reasoning(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("reasoning")) as lw:
        response = await lw.chat("lane", MESSAGES)
        _, chunks = await stream(lw)
    assert response.reasoning_content == REASONING
    assert "".join(c.reasoning_content for c in chunks) == REASONING
    assert response.usage.completion_tokens == 9
    assert response.usage.reasoning_tokens == (4 if wire.counts_reasoning else None)


async def test_503_is_retried(sim, wire) -> None:
    spec = unique_spec("fail_first=1,status=503")
    async with lane(sim, wire, spec, retries=1, retry_on=[503], backoff={"base": "10ms"}) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in response.attempts] == ["503", "ok"]


@in_virtual_time
async def test_429_pushback_is_honoured(vsim: VirtualSim, wire: Wire) -> None:
    """Gemini tells the wait in the body (``RetryInfo``), the others in ``Retry-After``.

    In virtual time, so the wait is measured exactly: the 0.2 s asked, no more.
    """
    spec = unique_spec("fail_first=1,status=429,retry_after=0.2")
    async with vsim.laneway(config(vsim, wire, spec, deadline="5s", max_pushbacks=1)) as lw:
        response = await lw.chat("lane", MESSAGES)
    first, second = response.attempts
    assert first.pushback and first.outcome == "429" and first.waited == pytest.approx(0.2)
    assert second.outcome == "ok"
    assert vsim.hits(spec) == 2


async def test_400_is_rejected_and_never_retried(sim, wire) -> None:
    spec = unique_spec("status=400")
    async with lane(sim, wire, spec, retries=2, retry_on=[503]) as lw:
        with pytest.raises(UpstreamRejected):
            await lw.chat("lane", MESSAGES)
    assert await hits(sim, spec) == 1


async def test_context_window_rejection_is_recognised(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("context_length")) as lw:
        with pytest.raises(ContextLengthExceeded):
            await lw.chat("lane", MESSAGES)


async def test_cut_after_content_is_interrupted(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("cut_after=2")) as lw:
        chat = lw.chat_stream("lane", MESSAGES)
        with pytest.raises(StreamInterrupted):
            async for _ in chat:
                pass
    assert chat.content


async def test_malformed_event_is_skipped_and_counted(sim, wire) -> None:
    async with lane(sim, wire, unique_spec("malformed=1")) as lw:
        chat, _ = await stream(lw)
    assert chat.content == ANSWER
    assert chat.malformed_events == 1


async def test_embeddings_with_pinned_dimensions(sim, embed_wire) -> None:
    async with lane(sim, embed_wire, unique_spec("ok"), kind="embed", dimensions=16) as lw:
        response = await lw.embed("lane", ["a", "b", "c"])
    assert [len(vector) for vector in response.vectors] == [16, 16, 16]
    assert response.usage.prompt_tokens is not None and response.usage.source == "provider"


async def test_embeddings_of_the_wrong_length_are_refused(sim, embed_wire) -> None:
    async with lane(sim, embed_wire, unique_spec("dims=12"), kind="embed", dimensions=16) as lw:
        with pytest.raises(DimensionMismatch):
            await lw.embed("lane", ["a"])


async def test_embeddings_without_usage_are_unknown(sim, embed_wire) -> None:
    async with lane(sim, embed_wire, unique_spec("nousage"), kind="embed") as lw:
        response = await lw.embed("lane", "text")
    assert response.usage.prompt_tokens is None and not response.usage.known
