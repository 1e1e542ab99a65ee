"""A stream's faults rescued on a fallback, with honest usage, cost and settlement.

Each test names the fault of issue 10's table it covers, at the engine, against
the simulator in virtual time (``tests.virtual``): timings are exact and cost
nothing. The same faults run end to end over loopback in ``tests/server/test_faults.py``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from laneway.accounting import Pricer
from laneway.config.models import LanewayConfig
from laneway.core.outcomes import SourceRecord
from laneway.core.records import CallRecord
from laneway.errors import StreamInterrupted, UpstreamFailed
from laneway.sim._answers import answer_pieces
from laneway.state.admission.base import Ask
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]
WORDS = 60
FULL_ANSWER = "".join(answer_pieces(WORDS))
PRICES = {"a": {"input": 1.0, "output": 2.0}, "b": {"input": 10.0, "output": 20.0}}


class Records:
    """An observer keeping every call record."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


def source(sim: VirtualSim, name: str, spec: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": sim_url(sim, spec), "model": name, "name": name, **extra}


def lane(*sources: dict[str, Any], **settings: Any) -> LanewayConfig:
    body = {
        "retries": 2,
        "retry_on": ["timeout", "connect", 503],
        "backoff": {"kind": "exponential", "base": "20ms"},
        "deadline": "10s",
    }
    return LanewayConfig.model_validate(
        {"lanes": {"lane": {**body, **settings, "sources": sources}}}
    )


def bodies(vsim: VirtualSim) -> list[dict[str, Any]]:
    """Each request's JSON body, in sending order."""
    return [orjson.loads(request.body) for request in vsim.transport.requests]


async def run(vsim: VirtualSim, config: LanewayConfig) -> Any:
    """Stream the lane's answer: the stream, its error, seconds taken, and its record.

    Every chunk forwarded carries the first one's ``id``: a continued stream is
    one answer to the caller.
    """
    records = Records()
    ids: set[object] = set()
    async with vsim.laneway(config) as lw:
        lw.engine.recorder.observers.append(records)
        stream = lw.chat_stream("lane", MESSAGES)
        started = vsim.clock.now()
        failure: Exception | None = None
        try:
            async for chunk in stream:
                ids.add((chunk.raw or {}).get("id"))
        except (StreamInterrupted, UpstreamFailed) as exc:
            failure = exc
        took = vsim.clock.now() - started
    assert len(ids) <= 1
    return stream, failure, took, records.records[-1]


@in_virtual_time
async def test_no_headers_fails_at_first_byte_timeout_not_attempt_timeout(vsim: VirtualSim) -> None:
    spec = unique_spec("sleep=30")
    config = lane(
        source(vsim, "a", spec),
        first_byte_timeout="300ms",
        attempt_timeout="5s",
        retries=0,
    )
    stream, failure, took, _ = await run(vsim, config)
    assert isinstance(failure, UpstreamFailed)
    assert "first_byte_timeout" in str(failure)
    assert took == pytest.approx(0.3), "cut at first_byte_timeout, long before attempt_timeout"
    assert [a.outcome for a in stream.attempts] == ["timeout"]


@in_virtual_time
async def test_no_headers_gets_the_fallbacks_answer(vsim: VirtualSim) -> None:
    config = lane(
        source(vsim, "a", unique_spec("sleep=30")),
        source(vsim, "b", unique_spec(f"chunks={WORDS}"), priority=1),
        first_byte_timeout="300ms",
        attempt_timeout="5s",
    )
    stream, failure, took, _ = await run(vsim, config)
    assert failure is None
    assert stream.source == "b" and stream.content == FULL_ANSWER
    *timed_out, answered = [(a.source, a.outcome) for a in stream.attempts]
    assert answered == ("b", "ok") and set(timed_out) == {("a", "timeout")}
    assert took == pytest.approx(0.3), "the timeout sets a moves to b at once"


@in_virtual_time
async def test_slow_first_token_is_a_timeout_the_fallback_answers(vsim: VirtualSim) -> None:
    config = lane(
        source(vsim, "a", unique_spec("ttfb=30")),
        source(vsim, "b", unique_spec(f"chunks={WORDS}"), priority=1),
        first_byte_timeout="300ms",
    )
    stream, failure, _, _ = await run(vsim, config)
    assert failure is None and stream.source == "b"
    assert stream.attempts[0].outcome == "timeout"
    assert "first_byte_timeout" in stream.attempts[0].message


@in_virtual_time
async def test_stream_cut_continues_on_a_prefill_fallback(vsim: VirtualSim) -> None:
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},cut_after=40"), price=PRICES["a"]),
        source(vsim, "b", unique_spec(f"chunks={WORDS}"), priority=1, accepts_prefill=True)
        | {"price": PRICES["b"]},
        continue_on_cut=True,
    )
    stream, failure, _, record = await run(vsim, config)
    assert failure is None
    assert stream.content == FULL_ANSWER, "one complete answer, nothing repeated"
    assert bodies(vsim)[-1]["messages"][-1] == {
        "role": "assistant",
        "content": "".join(answer_pieces(WORDS)[:40]),
    }
    cut, continued = record.attempts
    assert (cut.source, cut.outcome, cut.continuation) == ("a", "cut", False)
    assert (continued.source, continued.outcome, continued.continuation) == ("b", "ok", True)
    assert cut.usage is not None and cut.usage.source == "estimated"
    assert continued.as_dict()["continuation"] is True
    assert cut.as_dict()["usage"]["usage_source"] == "estimated", "telemetry's attempts_json"
    assert continued.usage is not None and continued.usage.source == "provider"
    assert continued.usage.completion_tokens == WORDS - 40
    usage = record.usage
    assert usage.source == "estimated", "part of the sum is an estimate"
    assert usage.prompt_tokens == cut.usage.prompt_tokens + continued.usage.prompt_tokens
    assert usage.completion_tokens == cut.usage.completion_tokens + WORDS - 40
    assert usage.prompt_tokens is not None and continued.usage.prompt_tokens is not None
    assert continued.usage.prompt_tokens > cut.usage.prompt_tokens, "the prefill was sent"
    cost = Pricer.for_lanes(config.lanes).cost(record)
    a_usd = (cut.usage.prompt_tokens * 1.0 + (cut.usage.completion_tokens or 0) * 2.0) / 1e6
    b_usd = (continued.usage.prompt_tokens * 10.0 + (WORDS - 40) * 20.0) / 1e6
    assert cost.status == "estimated"
    assert cost.usd == pytest.approx(a_usd + b_usd)


@in_virtual_time
async def test_stream_stalled_past_idle_timeout_continues_on_the_fallback(
    vsim: VirtualSim,
) -> None:
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},stall_after=40")),
        source(vsim, "b", unique_spec(f"chunks={WORDS}"), priority=1, accepts_prefill=True),
        continue_on_cut=True,
        idle_timeout="300ms",
    )
    stream, failure, took, record = await run(vsim, config)
    assert failure is None and stream.content == FULL_ANSWER
    assert [(a.source, a.outcome) for a in record.attempts] == [("a", "timeout"), ("b", "ok")]
    assert "idle_timeout" in record.attempts[0].message
    assert took == pytest.approx(0.3), "b continues as soon as a is idle for idle_timeout"


@in_virtual_time
async def test_stream_cut_restarts_on_a_fallback_that_refuses_prefill(vsim: VirtualSim) -> None:
    fallback = unique_spec(f"chunks={WORDS},reject_prefill")
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},cut_after=40")),
        source(vsim, "b", fallback, priority=1),
        continue_on_cut="restart",
    )
    stream, failure, _, record = await run(vsim, config)
    assert failure is None
    assert stream.content == FULL_ANSWER, "the restarted answer's repeat of the sent text is cut"
    assert bodies(vsim)[-1]["messages"] == MESSAGES, "asked afresh, without the prefill"
    assert vsim.hits(fallback) == 1
    assert [(a.outcome, a.continuation) for a in record.attempts] == [("cut", False), ("ok", True)]
    restarted = record.attempts[1].usage
    assert restarted is not None and restarted.completion_tokens == WORDS, "billed in full"


@pytest.mark.parametrize("mode", [True, "restart"])
@in_virtual_time
async def test_a_declared_prefill_source_that_refuses_it_is_asked_again_only_under_restart(
    vsim: VirtualSim, mode: object
) -> None:
    fallback = unique_spec(f"chunks={WORDS},reject_prefill")
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},cut_after=40")),
        source(vsim, "b", fallback, priority=1, accepts_prefill=True),
        continue_on_cut=mode,
    )
    stream, failure, _, record = await run(vsim, config)
    outcomes = [(a.source, a.outcome, a.continuation) for a in record.attempts]
    if mode == "restart":
        assert failure is None and stream.content == FULL_ANSWER
        assert outcomes == [("a", "cut", False), ("b", "400", True), ("b", "ok", True)]
        assert vsim.hits(fallback) == 2
    else:
        assert isinstance(failure, StreamInterrupted)
        assert stream.content == "".join(answer_pieces(WORDS)[:40])
        assert outcomes == [("a", "cut", False), ("b", "400", True)]
        assert vsim.hits(fallback) == 1


@in_virtual_time
async def test_a_restarted_answer_that_differs_is_never_spliced(vsim: VirtualSim) -> None:
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},cut_after=40")),
        source(vsim, "b", unique_spec("json_after=5"), priority=1),
        continue_on_cut="restart",
    )
    stream, failure, _, record = await run(vsim, config)
    assert isinstance(failure, StreamInterrupted)
    assert stream.content == "".join(answer_pieces(WORDS)[:40]), "nothing added to what was sent"
    assert [a.outcome for a in record.attempts] == ["cut", "diverged"]
    assert record.error == "stream_interrupted"


@in_virtual_time
async def test_continue_on_cut_true_never_restarts_without_prefill(vsim: VirtualSim) -> None:
    fallback = unique_spec(f"chunks={WORDS}")
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},cut_after=40")),
        source(vsim, "b", fallback, priority=1),
        continue_on_cut=True,
    )
    _, failure, _, _ = await run(vsim, config)
    assert isinstance(failure, StreamInterrupted)
    assert vsim.hits(fallback) == 0


@in_virtual_time
async def test_malformed_chunk_and_no_done_still_give_the_primarys_answer(
    vsim: VirtualSim,
) -> None:
    fallback = unique_spec("ok")
    config = lane(
        source(vsim, "a", unique_spec(f"chunks={WORDS},malformed=10,nodone")),
        source(vsim, "b", fallback, priority=1),
    )
    stream, failure, took, record = await run(vsim, config)
    assert failure is None and stream.source == "a" and stream.content == FULL_ANSWER
    assert record.malformed_events == 1 and record.usage.source == "provider"
    assert took == 0.0, "complete at its usage chunk, without waiting for [DONE]"
    assert vsim.hits(fallback) == 0


@in_virtual_time
async def test_content_filter_400_is_returned_as_is(vsim: VirtualSim) -> None:
    primary, fallback = unique_spec("content_filter"), unique_spec("ok")
    config = lane(source(vsim, "a", primary), source(vsim, "b", fallback, priority=1))
    _, failure, _, _ = await run(vsim, config)
    assert isinstance(failure, UpstreamFailed) and failure.status == 400
    assert "content filter" in str(failure)
    assert (vsim.hits(primary), vsim.hits(fallback)) == (1, 0)


@pytest.mark.parametrize(("window", "moves"), [(8000, True), (4000, False)])
@in_virtual_time
async def test_context_length_400_moves_only_to_a_larger_window(
    vsim: VirtualSim, window: int, moves: bool
) -> None:
    primary, fallback = unique_spec("context_length"), unique_spec("ok")
    config = lane(
        source(vsim, "a", primary, context_window=4000),
        source(vsim, "b", fallback, priority=1, context_window=window),
    )
    stream, failure, _, _ = await run(vsim, config)
    assert (failure is None) is moves
    assert (vsim.hits(primary), vsim.hits(fallback)) == (1, int(moves))
    if moves:
        assert stream.source == "b"


class SettleSpy:
    """Wraps the admission store, keeping what each settle passed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.settled: list[tuple[str, int | None, str | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        self.settled.append((ask.source, tokens, code))
        record: SourceRecord = await self.inner.settle(lane, ask, tokens, code)
        return record


@in_virtual_time
async def test_a_stream_holds_its_slot_and_settles_its_real_tokens_at_the_end(
    vsim: VirtualSim,
) -> None:
    spec = unique_spec("chunks=8,delay=0.05")
    config = lane(source(vsim, "a", spec, tpm=100000, concurrency={"max": 4}))
    async with vsim.laneway(config) as lw:
        admission = lw.engine.loop.admission
        spy = SettleSpy(admission.store)
        admission.store = spy
        stream = lw.chat_stream("lane", MESSAGES)
        async with stream:
            chunks = aiter(stream)
            await anext(chunks)
            pacer = lw.engine.lane("lane").memory.pacers["a"]
            assert pacer.in_flight == 1 and spy.settled == [], "held while the answer flows"
            async for _ in chunks:
                pass
        assert pacer.in_flight == 0
        usage = stream.usage
    assert usage is not None and usage.total_tokens is not None
    assert spy.settled == [("a", usage.total_tokens, "ok")]


@in_virtual_time
async def test_a_cut_stream_settles_what_it_consumed(vsim: VirtualSim) -> None:
    config = lane(source(vsim, "a", unique_spec(f"chunks={WORDS},cut_after=40"), tpm=100000))
    async with vsim.laneway(config) as lw:
        admission = lw.engine.loop.admission
        spy = SettleSpy(admission.store)
        admission.store = spy
        stream = lw.chat_stream("lane", MESSAGES)
        with pytest.raises(StreamInterrupted):
            async for _ in stream:
                pass
    usage = stream.usage
    assert usage is not None and usage.source == "estimated" and usage.completion_tokens
    assert spy.settled == [("a", usage.total_tokens, "failed")]


@in_virtual_time
async def test_a_stream_closed_by_its_caller_frees_its_slot_unjudged(vsim: VirtualSim) -> None:
    config = lane(source(vsim, "a", unique_spec("chunks=50,delay=0.05"), concurrency={"max": 2}))
    async with vsim.laneway(config) as lw:
        admission = lw.engine.loop.admission
        spy = SettleSpy(admission.store)
        admission.store = spy
        stream = lw.chat_stream("lane", MESSAGES)
        chunks = aiter(stream)
        await anext(chunks)
        await anext(chunks)
        await stream.aclose()
        assert lw.engine.lane("lane").memory.pacers["a"].in_flight == 0
    [(name, tokens, code)] = spy.settled
    assert (name, code) == ("a", None) and tokens
    assert [a.outcome for a in stream.attempts] == ["cancelled"]
