"""Streams through the gateway: retried before content, honest after it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import (
    HELLO,
    RunningGateway,
    config,
    hits,
    serve_gateway,
    source,
    sse_events,
    streamed_text,
)

FULL = "sim answer w2 w3 w4"
SPECS = {
    name: unique_spec(spec)
    for name, spec in {
        "ok": "",
        "cut_first": "cut_after=0",
        "cut_late": "cut_after=2",
        "stall": "stall_after=2",
        "nodone": "nodone",
        "malformed": "malformed=1",
        "down": "status=503",
        "small_window": "window=20",
        "continue_from": "cut_after=2",
        "no_prefill": "reject_prefill",
        "prefill": "",
    }.items()
}
FAST_RETRY = {"retries": 1, "retry_on": ["cut"], "backoff": {"base": "10ms"}}


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    def one(name: str, **lane: Any) -> dict[str, Any]:
        return {"sources": [source(sim, SPECS[name], name=name)], **lane}

    lanes = {
        "ok": one("ok"),
        "cut_first": {
            **FAST_RETRY,
            "sources": [source(sim, SPECS["cut_first"], name="cutter"), source(sim, SPECS["ok"])],
        },
        "cut_late": one("cut_late", **FAST_RETRY),
        "stall": one("stall", idle_timeout="300ms"),
        "nodone": one("nodone"),
        "malformed": one("malformed"),
        "down": one("down"),
        "window": {
            "sources": [
                source(sim, SPECS["small_window"], name="small", context_window=100),
                source(sim, SPECS["ok"], name="large", context_window=1000, priority=1),
            ]
        },
        "continue": {
            "continue_on_cut": True,
            "sources": [
                source(sim, SPECS["continue_from"], name="first"),
                source(sim, SPECS["no_prefill"], name="no_prefill", priority=1),
                source(sim, SPECS["prefill"], name="prefill", accepts_prefill=True, priority=2),
            ],
        },
    }
    with serve_gateway(config(lanes)) as running:
        yield running


@pytest.fixture
def stream(gw: RunningGateway, http):
    async def call(lane: str, **extra: Any) -> tuple[int, Any, Any, float]:
        body = {"model": lane, "messages": HELLO, "stream": True, **extra}
        started = time.perf_counter()
        async with http.post(f"{gw.v1}/chat/completions", data=orjson.dumps(body)) as response:
            raw = await response.read()
            elapsed = time.perf_counter() - started
            if response.headers["content-type"] != "text/event-stream":
                return response.status, response.headers, orjson.loads(raw), elapsed
            return response.status, response.headers, sse_events(raw), elapsed

    return call


async def test_usage_chunk_only_when_asked(stream) -> None:
    _, headers, events, _ = await stream("ok")
    assert streamed_text(events) == FULL and events[-1] == "[DONE]"
    assert not any("usage" in e for e in events[:-1])
    assert headers["x-laneway-lane"] == "ok" and headers["x-laneway-attempts"] == "1"
    _, _, events, _ = await stream("ok", stream_options={"include_usage": True})
    assert events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] == 5


async def test_cut_before_content_is_retried_on_the_next_source(stream, http, sim) -> None:
    status, headers, events, _ = await stream("cut_first")
    assert status == 200 and streamed_text(events) == FULL and events[-1] == "[DONE]"
    assert headers["x-laneway-attempts"] == "2"
    assert headers["x-laneway-source"] == "openai:sim-model"
    assert await hits(http, sim, SPECS["cut_first"]) == 1


async def test_failure_before_content_keeps_a_real_status(stream) -> None:
    status, headers, body, _ = await stream("down")
    assert status == 503 and body["error"]["code"] == "upstream_error"
    assert headers["x-laneway-attempts"] == "1"


async def test_cut_after_content_ends_with_an_error_event_and_no_done(stream) -> None:
    status, _, events, _ = await stream("cut_late")
    assert status == 200
    assert streamed_text(events) == "sim answer"
    error = events[-1]
    assert error["error"]["code"] == "stream_interrupted"
    assert error["laneway"]["lane"] == "cut_late"
    assert "[DONE]" not in events


async def test_stall_past_idle_timeout_ends_in_band(stream) -> None:
    status, _, events, elapsed = await stream("stall")
    assert status == 200 and streamed_text(events) == "sim answer"
    assert events[-1]["error"]["code"] == "stream_interrupted"
    assert "idle_timeout" in events[-1]["error"]["message"]
    assert 0.3 <= elapsed < 0.3 + 0.5


async def test_missing_done_after_the_final_chunk_ends_promptly(stream) -> None:
    status, _, events, elapsed = await stream("nodone")
    assert status == 200 and streamed_text(events) == FULL and events[-1] == "[DONE]"
    assert elapsed < 0.8


async def test_malformed_event_is_skipped(stream) -> None:
    _, _, events, _ = await stream("malformed")
    assert streamed_text(events) == FULL and events[-1] == "[DONE]"


async def test_context_length_moves_to_a_larger_window(gw, http, sim) -> None:
    long_prompt = [{"role": "user", "content": "a prompt longer than twenty characters"}]
    body = orjson.dumps({"model": "window", "messages": long_prompt})
    async with http.post(f"{gw.v1}/chat/completions", data=body) as response:
        assert response.status == 200
        assert response.headers["x-laneway-source"] == "large"
        assert response.headers["x-laneway-attempts"] == "2"
    assert await hits(http, sim, SPECS["small_window"]) == 1


async def test_cut_stream_continues_on_a_prefill_source(stream, http, sim) -> None:
    """The continuation carries the text so far as an assistant prefill.

    Its prompt is "hello" plus the prefill "sim answer": 15 characters, which the
    sim counts as 4 prompt tokens (2 without the prefill), and it answers the rest.
    The usage chunk is the continuation's own. The source that rejects prefills
    is never asked.
    """
    status, _, events, _ = await stream("continue", stream_options={"include_usage": True})
    assert status == 200 and events[-1] == "[DONE]"
    assert streamed_text(events) == FULL
    assert events[-2]["usage"]["prompt_tokens"] == 4
    assert await hits(http, sim, SPECS["prefill"]) == 1
    assert await hits(http, sim, SPECS["no_prefill"]) == 0
