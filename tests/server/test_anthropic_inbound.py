"""The official ``anthropic`` SDK against ``POST /v1/messages`` on an OpenAI-speaking lane.

The upstream is scripted (``tests.server.scripted``), so each test checks both
directions exactly: the OpenAI request the lane's source received, and the
Anthropic answer the SDK parsed. ``max_retries=0``: the SDK's retries would
hide the gateway's.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import anthropic
import orjson
import pytest
from anthropic import Anthropic, AsyncAnthropic

from laneway.app import build_engine
from laneway.app.composer import build_gateway
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from laneway.sim import RunningSim
from laneway.sim._anthropic import SIGNATURE
from tests.helpers import unique_spec
from tests.providers.support import ANTHROPIC, source
from tests.server.asgi_driver import call
from tests.server.scripted import (
    ARGUMENTS,
    REASONING,
    TEXT,
    Scripted,
    ScriptedUpstream,
    scripted_source,
    serve_scripted,
)
from tests.server.support import serve_app

WEATHER_TOOL: dict[str, Any] = {
    "name": "weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
PNG_B64 = "iVBORw0KGgo="


def ask(sdk: Anthropic | AsyncAnthropic, **request: Any) -> Any:
    """``messages.create``, its answer untyped (the SDK's unions are not what is tested)."""
    return sdk.messages.create(**request)


@pytest.fixture
def client(scripted: Scripted) -> Iterator[Anthropic]:
    with Anthropic(base_url=scripted.gw.url, api_key="unused", max_retries=0) as sdk:
        yield sdk


@pytest.fixture
def upstream(scripted: Scripted) -> ScriptedUpstream:
    return scripted.upstream


def test_text_answer_with_system_stop_and_usage(
    client: Anthropic, upstream: ScriptedUpstream
) -> None:
    message = ask(
        client,
        model="chat",
        max_tokens=100,
        system="Be brief.",
        stop_sequences=["END"],
        metadata={"user_id": "u-1"},
        extra_body={"temperature": 0.2},
        messages=[{"role": "user", "content": "Capital of France?"}],
    )
    assert upstream.last == {
        "model": "upstream-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Capital of France?"},
        ],
        "max_tokens": 100,
        "temperature": 0.2,
        "stop": ["END"],
        "user": "u-1",
    }
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[1].text == TEXT
    assert message.content[0].thinking == REASONING
    assert message.stop_reason == "end_turn"
    assert message.model == "upstream-model"
    assert message.id == "msg_chatcmpl-7"
    assert message.usage.input_tokens == 20
    assert message.usage.cache_read_input_tokens == 10
    assert message.usage.output_tokens == 12


def test_tool_call_answer(client: Anthropic, upstream: ScriptedUpstream) -> None:
    message = ask(
        client,
        model="chat",
        max_tokens=100,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
        messages=[{"role": "user", "content": "Weather in Paris?"}],
    )
    assert upstream.last["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city",
                "parameters": WEATHER_TOOL["input_schema"],
            },
        }
    ]
    assert upstream.last["tool_choice"] == "required"
    assert upstream.last["parallel_tool_calls"] is False
    tool_use = message.content[-1]
    assert tool_use.type == "tool_use"
    assert (tool_use.id, tool_use.name, tool_use.input) == (
        "call_1",
        "weather",
        {"city": "Paris", "days": 2},
    )
    assert message.stop_reason == "tool_use"


def test_history_with_tool_use_tool_result_and_image(
    client: Anthropic, upstream: ScriptedUpstream
) -> None:
    ask(
        client,
        model="chat",
        max_tokens=50,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "weather"},
        thinking={"type": "enabled", "budget_tokens": 2048},
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is here, and its weather?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "earlier", "signature": "sig"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "tu_1",
                        "name": "weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu_1",
                        "content": [{"type": "text", "text": "sunny"}],
                    },
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
    )
    assert upstream.last["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is here, and its weather?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "tu_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
            "thinking_blocks": [{"type": "thinking", "thinking": "earlier", "signature": "sig"}],
        },
        {"role": "tool", "tool_call_id": "tu_1", "content": "sunny"},
        {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
    ]
    assert upstream.last["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert upstream.last["reasoning_effort"] == "low"


def test_streamed_text_through_the_stream_helper(
    client: Anthropic, upstream: ScriptedUpstream
) -> None:
    with client.messages.stream(
        model="chat", max_tokens=100, messages=[{"role": "user", "content": "Capital?"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert upstream.last["stream"] is True
    assert text == TEXT
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (20, 12)
    assert final.usage.cache_read_input_tokens == 10


async def test_streamed_tool_call_events(scripted: Scripted) -> None:
    async with AsyncAnthropic(base_url=scripted.gw.url, api_key="unused", max_retries=0) as sdk:
        stream = await ask(
            sdk,
            model="chat",
            max_tokens=100,
            tools=[WEATHER_TOOL],
            messages=[{"role": "user", "content": "Weather?"}],
            stream=True,
        )
        events: list[Any] = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["thinking", "tool_use"]
    fragments = [
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert "".join(fragments) == ARGUMENTS
    delta = next(e for e in events if e.type == "message_delta")
    assert delta.delta.stop_reason == "tool_use"


def test_errors_come_in_anthropic_shape(client: Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as missing:
        ask(client, model="nope", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    body: Any = missing.value.body
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        ask(client, model="chat", max_tokens=0, messages=[{"role": "user", "content": "hi"}])


def test_refused_blocks_name_the_field(client: Anthropic) -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "x"},
    }
    with pytest.raises(anthropic.BadRequestError, match=r"messages\[0\]\.content\[0\]\.type"):
        ask(
            client,
            model="chat",
            max_tokens=5,
            messages=[{"role": "user", "content": [document]}],
        )
    with pytest.raises(anthropic.BadRequestError, match=r"tools\[0\]\.type"):
        ask(
            client,
            model="chat",
            max_tokens=5,
            tools=[{"type": "web_search_20250305", "name": "web_search"}],
            messages=[{"role": "user", "content": "hi"}],
        )


def test_upstream_outage_is_an_error_in_anthropic_shape(client: Anthropic) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        ask(client, model="down", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 503
    body: Any = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    assert body["laneway"]["lane"] == "down"
    assert body["laneway"]["attempts"][0]["status"] == 503


def test_stream_cut_after_content_raises_in_the_sdk(client: Anthropic) -> None:
    """The in-band ``error`` event reaches SDK users as an exception, not as a short answer."""
    received: list[str] = []
    hi: Any = [{"role": "user", "content": "hi"}]
    with (
        pytest.raises(anthropic.APIStatusError, match="stream"),
        client.messages.stream(model="cut", max_tokens=5, messages=hi) as stream,
    ):
        received.extend(stream.text_stream)
    assert "".join(received) == "Paris"


def test_x_api_key_authenticates() -> None:
    lanes = {"chat": {"sources": [scripted_source()]}}
    keys = [{"name": "team", "key": "os.environ/TEAM_KEY"}]
    with serve_scripted(lanes, environ={"TEAM_KEY": "sk-team"}, keys=keys) as served:
        gw = served.gw
        with Anthropic(base_url=gw.url, api_key="sk-team", max_retries=0) as sdk:
            message = ask(
                sdk, model="chat", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        assert message.content[-1].text == TEXT
        with (
            Anthropic(base_url=gw.url, api_key="sk-wrong", max_retries=0) as sdk,
            pytest.raises(anthropic.AuthenticationError) as caught,
        ):
            ask(sdk, model="chat", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        body: Any = caught.value.body
        assert body["error"]["type"] == "authentication_error"


def broken_upstream(request: HttpRequest) -> HttpResponse:
    raise ZeroDivisionError("a bug deep inside")


async def test_an_unexpected_exception_is_a_500_in_anthropic_shape() -> None:
    lanes = {"chat": {"sources": [scripted_source()]}}
    settings = LanewayConfig.model_validate({"lanes": lanes, "telemetry": {"url": "none"}})
    engine = build_engine(settings, {}, transport=MockTransport(broken_upstream))
    body = orjson.dumps(
        {"model": "chat", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    )
    with contextlib.redirect_stderr(io.StringIO()):
        answer = await call(
            gateway_over(settings, engine, {}),
            "POST",
            "/v1/messages",
            body,
            [(b"x-request-id", b"r-9")],
        )
    await engine.aclose()
    assert answer.status == 500
    error = orjson.loads(answer.body)
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert "r-9" in error["error"]["message"]
    assert b"ZeroDivisionError" not in answer.body
    assert answer.headers[b"x-request-id"] == b"r-9"


@pytest.fixture(scope="module")
def thinker(sim: RunningSim, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Anthropic]:
    """The SDK against a lane whose one source is the sim's native Anthropic API, reasoning."""
    lanes = {"thinker": {"sources": [source(sim, ANTHROPIC, unique_spec("reasoning"))]}}
    settings = LanewayConfig.model_validate({"lanes": lanes, "telemetry": {"url": "none"}})
    with (
        serve_app(build_gateway(settings, {}, tmp_path_factory.mktemp("thinker"))) as gw,
        Anthropic(base_url=gw.url, api_key="unused", max_retries=0) as sdk,
    ):
        yield sdk


THINKING: Any = {"type": "enabled", "budget_tokens": 2048}


def test_signed_thinking_comes_back_and_goes_back(thinker: Anthropic) -> None:
    """An Anthropic source's signed thinking reaches the SDK, and its next turn carries it back.

    The sim refuses a thinking tool turn whose assistant message does not open
    with its thinking, as Anthropic does, so the second call proves the round trip.
    """
    question: Any = [{"role": "user", "content": "Weather in Paris?"}]
    first = ask(
        thinker,
        model="thinker",
        max_tokens=2000,
        thinking=THINKING,
        tools=[WEATHER_TOOL],
        messages=question,
    )
    thought, use = first.content[0], first.content[-1]
    assert (thought.type, thought.signature) == ("thinking", SIGNATURE)
    assert use.type == "tool_use"
    history = [
        *question,
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}],
        },
    ]
    second = ask(
        thinker,
        model="thinker",
        max_tokens=2000,
        thinking=THINKING,
        tools=[WEATHER_TOOL],
        messages=history,
    )
    assert second.content[-1].type == "text"


def test_streamed_thinking_is_signed(thinker: Anthropic) -> None:
    request: Any = {"messages": [{"role": "user", "content": "hi"}], "thinking": THINKING}
    with thinker.messages.stream(model="thinker", max_tokens=2000, **request) as stream:
        final = stream.get_final_message()
    thought: Any = final.content[0]
    assert (thought.type, thought.signature) == ("thinking", SIGNATURE)
    assert thought.thinking
