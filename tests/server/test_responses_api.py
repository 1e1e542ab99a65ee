"""The official OpenAI SDK's Responses API against ``POST /v1/responses`` on a chat lane.

The upstream is scripted (``tests.server.scripted``): each test checks the
chat request the source received and the ``response`` the SDK parsed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from tests.server.scripted import (
    ARGUMENTS,
    REASONING,
    TEXT,
    Scripted,
    ScriptedUpstream,
)

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
IMAGE = "data:image/png;base64,iVBORw0KGgo="


@pytest.fixture
def client(scripted: Scripted) -> Iterator[OpenAI]:
    with OpenAI(base_url=scripted.gw.v1, api_key="unused", max_retries=0) as sdk:
        yield sdk


@pytest.fixture
def upstream(scripted: Scripted) -> ScriptedUpstream:
    return scripted.upstream


def respond(sdk: OpenAI | AsyncOpenAI, **request: Any) -> Any:
    """``responses.create``, its answer untyped (the SDK's unions are not what is tested)."""
    return sdk.responses.create(**request)


def test_text_with_instructions_and_usage(client: OpenAI, upstream: ScriptedUpstream) -> None:
    response = respond(
        client,
        model="chat",
        instructions="Be brief.",
        input="Capital of France?",
        max_output_tokens=64,
        temperature=0.3,
        metadata={"ticket": "42"},
    )
    assert upstream.last == {
        "model": "upstream-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Capital of France?"},
        ],
        "temperature": 0.3,
        "max_tokens": 64,
    }
    assert response.output_text == TEXT
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].content[0].text == REASONING
    assert response.status == "completed"
    assert response.metadata == {"ticket": "42"}
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (30, 12, 42)
    assert usage.input_tokens_details.cached_tokens == 10
    assert usage.output_tokens_details.reasoning_tokens == 4


def test_function_call_and_its_output_round_trip(
    client: OpenAI, upstream: ScriptedUpstream
) -> None:
    first = respond(client, model="chat", input="Weather in Paris?", tools=[WEATHER])
    call = first.output[-1]
    assert (call.type, call.name, call.call_id, call.arguments) == (
        "function_call",
        "weather",
        "call_1",
        ARGUMENTS,
    )
    assert upstream.last["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city",
                "parameters": WEATHER["parameters"],
            },
        }
    ]
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": ARGUMENTS},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    second = respond(client, model="chat", input=history, tools=[WEATHER], tool_choice="none")
    assert second.output_text == TEXT
    assert upstream.last["tool_choice"] == "none"
    assert upstream.last["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": ARGUMENTS},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]


def test_image_input_and_json_schema_format(client: OpenAI, upstream: ScriptedUpstream) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    content = [
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": IMAGE, "detail": "low"},
    ]
    respond(
        client,
        model="chat",
        input=[{"role": "user", "content": content}],
        text={
            "format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}
        },
        reasoning={"effort": "low"},
    )
    assert upstream.last["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": IMAGE, "detail": "low"}},
            ],
        }
    ]
    assert upstream.last["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }
    assert upstream.last["reasoning_effort"] == "low"


def test_stream_helper_assembles_the_final_response(client: OpenAI) -> None:
    with client.responses.stream(model="chat", input="Capital?") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == TEXT
    assert final.output_text == TEXT
    assert final.usage is not None and final.usage.total_tokens == 42


async def test_streamed_function_call_events(
    scripted: Scripted,
) -> None:
    async with AsyncOpenAI(base_url=scripted.gw.v1, api_key="unused", max_retries=0) as sdk:
        stream = await respond(sdk, model="chat", input="Weather?", tools=[WEATHER], stream=True)
        events: list[Any] = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    arguments = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    )
    assert arguments == ARGUMENTS
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == ARGUMENTS
    final = events[-1].response
    assert [item.type for item in final.output] == ["reasoning", "function_call"]
    assert final.output[1].call_id == "call_1"


def test_stream_cut_after_content_ends_with_an_error_event(client: OpenAI) -> None:
    events: list[Any] = list(respond(client, model="cut", input="hi", stream=True))
    assert events[-1].type == "error"
    assert "stream" in events[-1].message
    assert not any(event.type == "response.completed" for event in events)


def test_unsupported_fields_are_refused_by_name(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as stored:
        respond(client, model="chat", input="hi", previous_response_id="resp_1")
    body: Any = stored.value.body
    assert body["param"] == "previous_response_id"
    with pytest.raises(openai.BadRequestError, match=r"tools\[0\]\.type"):
        respond(client, model="chat", input="hi", tools=[{"type": "web_search"}])
