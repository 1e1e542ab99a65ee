"""The whole chat surface on every wire format, through the engine and the sim.

The sim's native endpoints check every field as the real APIs do, so a
translation an upstream would refuse fails here as the 400 it would get.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from laneway import Laneway
from laneway.accounting import cost_of
from laneway.accounting.rates import override_rate
from laneway.errors import RequestInvalid, UpstreamRejected
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import (
    ANTHROPIC,
    AZURE,
    GEMINI,
    OPENAI,
    WIRES,
    Wire,
    config,
    hits,
)

HI = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
    },
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(64)).decode()
IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
NATIVE = [GEMINI, ANTHROPIC]


class City(BaseModel):
    name: str
    population: int
    tags: list[str]
    mayor: str | None = None


@pytest.fixture(params=WIRES, ids=lambda wire: wire.name)
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=NATIVE, ids=lambda wire: wire.name)
def native(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


def lane(sim: RunningSim, wire: Wire, spec: str = "ok") -> Laneway:
    return Laneway.from_settings(config(sim, wire, unique_spec(spec)), environ={})


def assembled(chunks: list[Any]) -> dict[int, dict[str, str]]:
    """Streamed tool-call deltas put together by index, as OpenAI clients do."""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in (chunk.raw or {}).get("choices") or []:
            for delta in (choice.get("delta") or {}).get("tool_calls") or []:
                call = calls.setdefault(delta["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.get("id") or ""
                function = delta.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
    return calls


async def test_tool_call(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        answer = await lw.chat("lane", HI, tools=[WEATHER])
    assert answer.finish_reason == "tool_calls"
    (call,) = answer.tool_calls
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "get_weather"
    assert orjson.loads(call["function"]["arguments"]) == {"city": "sim", "days": 1}
    assert answer.raw["choices"][0]["message"]["content"] in (None, "")


async def test_streamed_parallel_tool_calls(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        chat = lw.chat_stream("lane", HI, tools=[WEATHER, TIME])
        chunks = [chunk async for chunk in chat]
    calls = assembled(chunks)
    assert sorted(calls) == [0, 1]
    assert [calls[i]["name"] for i in (0, 1)] == ["get_weather", "get_time"]
    assert orjson.loads(calls[1]["arguments"]) == {"zone": "sim"}
    assert all(call["id"] for call in calls.values())
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]
    assert chat.usage is not None and chat.usage.completion_tokens


@pytest.mark.parametrize(
    ("choice", "names"),
    [
        ("none", []),
        ("required", ["get_weather", "get_time"]),
        ({"type": "function", "function": {"name": "get_time"}}, ["get_time"]),
    ],
)
async def test_tool_choice(sim, wire, choice, names) -> None:
    async with lane(sim, wire) as lw:
        answer = await lw.chat("lane", HI, tools=[WEATHER, TIME], tool_choice=choice)
    assert [c["function"]["name"] for c in answer.tool_calls] == names
    assert answer.content == ("sim answer w2 w3 w4" if not names else "")


async def test_tool_results_in_the_history(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        first = await lw.chat("lane", HI, tools=[WEATHER, TIME])
        history = [*HI, first.raw["choices"][0]["message"]]
        history += [
            {"role": "tool", "tool_call_id": call["id"], "content": '{"temp": 21}'}
            for call in first.tool_calls
        ]
        answer = await lw.chat("lane", history, tools=[WEATHER, TIME])
    assert answer.content == "sim answer w2 w3 w4"
    assert answer.finish_reason == "stop" and not answer.tool_calls


async def test_images_reach_the_model(sim, wire) -> None:
    text = {"type": "text", "text": "What is in it?"}
    async with lane(sim, wire) as lw:
        plain = await lw.chat("lane", [{"role": "user", "content": [text]}])
        seen = await lw.chat("lane", [{"role": "user", "content": [text, IMAGE, IMAGE]}])
    assert plain.usage.prompt_tokens is not None and seen.usage.prompt_tokens is not None
    assert seen.usage.prompt_tokens - plain.usage.prompt_tokens == 2 * 258


async def test_json_schema_with_structured(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        result = await lw.structured("lane", HI, schema=City)
    assert result.value == City(name="sim", population=1, tags=["sim"], mayor="sim")
    assert result.asks == 1


async def test_json_object_streamed(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        chat = lw.chat_stream("lane", HI, response_format={"type": "json_object"})
        chunks = [chunk async for chunk in chat]
    assert orjson.loads(chat.content) == {"answer": "sim answer"}
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert not assembled(chunks)


async def test_stop_and_system_in_the_middle(sim, wire) -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Really brief."},
        {"role": "user", "content": "Again"},
    ]
    async with lane(sim, wire) as lw:
        answer = await lw.chat("lane", messages, stop=["w3"], temperature=0.5, max_tokens=300)
    assert answer.content == "sim answer w2 "
    assert answer.finish_reason == "stop"


async def test_seed_where_it_exists(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        if wire is ANTHROPIC:
            with pytest.raises(RequestInvalid, match="seed"):
                await lw.chat("lane", HI, seed=7)
        else:
            assert (await lw.chat("lane", HI, seed=7)).content == "sim answer w2 w3 w4"


async def test_reasoning_effort_and_its_tokens(sim, native) -> None:
    async with lane(sim, native) as lw:
        answer = await lw.chat("lane", HI, reasoning_effort="low", max_tokens=2000)
    assert answer.reasoning_content == "Considering the question carefully."
    expected = None if native is ANTHROPIC else 4
    assert answer.usage.reasoning_tokens == expected


async def test_n_is_refused_on_anthropic(sim) -> None:
    spec = unique_spec("ok")
    async with Laneway.from_settings(config(sim, ANTHROPIC, spec), environ={}) as lw:
        with pytest.raises(RequestInvalid) as err:
            await lw.chat("lane", HI, n=2)
        assert (await lw.chat("lane", HI, n=1)).content
    assert err.value.field == "n"
    assert await hits(sim, spec) == 1


@pytest.mark.parametrize("wire", [OPENAI, AZURE, GEMINI], ids=lambda w: w.name)
async def test_n_choices(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        answer = await lw.chat("lane", HI, n=3)
    choices = answer.raw["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2]
    assert {c["message"]["content"] for c in choices} == {"sim answer w2 w3 w4"}
    assert answer.usage.completion_tokens == 15


async def test_gemini_streams_every_candidate(sim) -> None:
    async with lane(sim, GEMINI) as lw:
        chat = lw.chat_stream("lane", HI, n=2, tools=[WEATHER])
        chunks = [chunk async for chunk in chat]
    deltas = [
        (choice["index"], call["index"], call["function"]["name"])
        for c in chunks
        for choice in (c.raw or {}).get("choices") or []
        for call in (choice.get("delta") or {}).get("tool_calls") or []
    ]
    assert deltas == [(0, 0, "get_weather"), (1, 0, "get_weather")]


async def test_provider_namespace_reaches_its_own_provider_only(sim, wire) -> None:
    async with lane(sim, wire) as lw:
        answer = await lw.chat(
            "lane", HI, anthropic={"top_k": 5}, gemini={"generationConfig": {"topK": 5}}
        )
    assert answer.content == "sim answer w2 w3 w4"


async def test_anthropic_thinking_with_tools_round_trips_its_thinking_blocks(sim) -> None:
    asks: dict[str, Any] = {"tools": [WEATHER], "reasoning_effort": "low", "max_tokens": 2000}
    async with lane(sim, ANTHROPIC) as lw:
        first = await lw.chat("lane", HI, **asks)
        message = first.raw["choices"][0]["message"]
        (block,) = message["thinking_blocks"]
        assert block["type"] == "thinking" and block["signature"]
        result = {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "21C"}
        answer = await lw.chat("lane", [*HI, message, result], **asks)
        assert answer.content == "sim answer w2 w3 w4"
        bare = {k: v for k, v in message.items() if k != "thinking_blocks"}
        with pytest.raises(UpstreamRejected, match="must start with a thinking block"):
            await lw.chat("lane", [*HI, bare, result], **asks)
        chat = lw.chat_stream("lane", HI, **asks)
        chunks = [chunk async for chunk in chat]
    streamed = [
        b
        for c in chunks
        for choice in (c.raw or {}).get("choices") or []
        for b in (choice.get("delta") or {}).get("thinking_blocks") or []
    ]
    assert streamed == [block]


LONG = "All work and no play makes a dull sim. " * 120


async def test_prompt_cache_reads_and_writes_are_reported_and_priced(sim, wire) -> None:
    system: dict[str, Any] = {"type": "text", "text": LONG}
    if wire is ANTHROPIC:
        system["cache_control"] = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [system]},
        {"role": "user", "content": "hi"},
    ]
    async with lane(sim, wire) as lw:
        first = await lw.chat("lane", messages)
        second = await lw.chat("lane", messages)
    marked = tokens = 1 + len(LONG) // 4
    assert second.usage.cached_tokens == marked
    if wire is ANTHROPIC:
        assert (first.usage.cached_tokens, first.usage.cache_write_tokens) == (0, marked)
        assert second.usage.cache_write_tokens == 0
    else:
        assert first.usage.cached_tokens in (None, 0) and first.usage.cache_write_tokens is None
    rate = override_rate(2.0, 8.0, cached_input=0.2, cache_write_input=2.5)
    fresh = (first.usage.prompt_tokens or 0) - tokens
    write_price = 2.5 if wire is ANTHROPIC else 2.0
    expected = (fresh * 2.0 + tokens * write_price + (first.usage.completion_tokens or 0) * 8) / 1e6
    assert cost_of(first.usage, rate, "chat").usd == pytest.approx(expected)
    details = second.raw["usage"]["prompt_tokens_details"]
    assert details["cached_tokens"] == marked
