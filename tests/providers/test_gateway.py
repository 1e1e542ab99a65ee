"""The OpenAI SDK, through ``laneway serve``, on Gemini and Anthropic lanes.

The gateway forwards each adapter's OpenAI-shaped ``raw`` answer and chunks as
they are, so an OpenAI client must be able to read them unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from pydantic import BaseModel

from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import ANTHROPIC, GEMINI, source
from tests.server.support import RunningGateway, config, serve_gateway

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]
NATIVE = [GEMINI.name, ANTHROPIC.name]


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes = {
        wire.name: {"sources": [source(sim, wire, unique_spec("reasoning"))]}
        for wire in (GEMINI, ANTHROPIC)
    }
    with serve_gateway(config(lanes)) as running:
        yield running


def client(gw: RunningGateway) -> OpenAI:
    return OpenAI(base_url=gw.v1, api_key="unused", max_retries=0, timeout=10.0)


@pytest.mark.parametrize("lane", NATIVE)
def test_sdk_reads_a_native_answer(gw, lane: str) -> None:
    with client(gw) as sdk:
        answer = sdk.chat.completions.create(model=lane, messages=HELLO)
    assert answer.choices[0].message.content == "sim answer w2 w3 w4"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.completion_tokens == 9


@pytest.mark.parametrize("lane", NATIVE)
def test_sdk_reads_a_native_stream(gw, lane: str) -> None:
    with client(gw) as sdk:
        chunks = list(
            sdk.chat.completions.create(
                model=lane, messages=HELLO, stream=True, stream_options={"include_usage": True}
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "sim answer w2 w3 w4"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1 and usage[0].completion_tokens == 9


class Forecast(BaseModel):
    city: str
    days: int


TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize("lane", NATIVE)
def test_sdk_parse_reads_a_native_json_answer(gw, lane: str) -> None:
    with client(gw) as sdk:
        answer = sdk.chat.completions.parse(model=lane, messages=HELLO, response_format=Forecast)
    assert answer.choices[0].message.parsed == Forecast(city="sim", days=1)


@pytest.mark.parametrize("lane", NATIVE)
def test_sdk_stream_helper_assembles_native_tool_calls(gw, lane: str) -> None:
    with (
        client(gw) as sdk,
        sdk.chat.completions.stream(model=lane, messages=HELLO, tools=TOOLS) as stream,
    ):
        final = stream.get_final_completion()
    (call,) = final.choices[0].message.tool_calls or []
    assert call.function.name == "get_weather"
    assert call.function.arguments == '{"city":"sim"}'
    assert final.choices[0].finish_reason == "tool_calls"
