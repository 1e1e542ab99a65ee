"""The Anthropic adapter's translation of the chat surface, both ways (pure)."""

from __future__ import annotations

from typing import Any, cast

import orjson
import pytest

from laneway.core.errors import Inexpressible, RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.transport import HttpResponse
from laneway.core.types import ChatRequest
from laneway.providers.anthropic import AnthropicProvider

PROVIDER = AnthropicProvider("https://api.anthropic.com/v1", "claude", "k", max_tokens=4096)
HI: list[ChatMessage] = [{"role": "user", "content": "Hi"}]
TOOL = {
    "type": "function",
    "function": {"name": "f", "description": "d", "parameters": {"type": "object"}},
}
CALL = {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}


def body(messages: list[ChatMessage] | list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    http = PROVIDER.chat_request(
        ChatRequest(cast("list[ChatMessage]", messages), params), stream=False
    )
    return orjson.loads(http.body)  # type: ignore[no-any-return]


def test_tools_choice_and_single_call() -> None:
    sent = body(HI, tools=[TOOL], tool_choice="required", parallel_tool_calls=False)
    assert sent["tools"] == [{"name": "f", "description": "d", "input_schema": {"type": "object"}}]
    assert sent["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    named = body(HI, tools=[TOOL], tool_choice={"type": "function", "function": {"name": "f"}})
    assert named["tool_choice"] == {"type": "tool", "name": "f"}
    assert body(HI, tools=[TOOL], tool_choice="none")["tool_choice"] == {"type": "none"}


def test_history_with_tool_calls_results_images_and_systems_anywhere() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "A."},
        {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "42"},
        {"role": "developer", "content": [{"type": "text", "text": "B."}]},
        {"role": "user", "content": "and?"},
    ]
    sent = body(messages, user="u-1")
    assert sent["system"] == [{"type": "text", "text": "A."}, {"type": "text", "text": "B."}]
    user, assistant, results = sent["messages"]
    assert user["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBORw0KGgo=",
    }
    assert assistant["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}
    ]
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"},
        {"type": "text", "text": "and?"},
    ]
    assert sent["metadata"] == {"user_id": "u-1"}


def test_https_images_and_pdfs() -> None:
    url = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    pdf = {"type": "image_url", "image_url": {"url": "data:application/pdf;base64,JVBERi0x"}}
    blocks = body([{"role": "user", "content": [url, pdf]}])["messages"][0]["content"]
    assert blocks[0]["source"] == {"type": "url", "url": "https://example.com/a.png"}
    assert blocks[1]["type"] == "document"


def test_json_schema_is_a_forced_tool_and_comes_back_as_content() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "Thing", "schema": schema}}
    sent = body(HI, response_format=fmt)
    assert sent["tools"][0]["name"] == "json_answer"
    assert sent["tools"][0]["input_schema"] == schema
    assert sent["tool_choice"] == {"type": "tool", "name": "json_answer"}
    answer = {
        "id": "msg_1",
        "content": [
            {"type": "tool_use", "id": "toolu_9", "name": "json_answer", "input": {"x": 3}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    result = PROVIDER.parse_chat(HttpResponse(200, {}, orjson.dumps(answer)), 0.0)
    assert (result.content, result.finish_reason, result.tool_calls) == ('{"x":3}', "stop", [])


def test_thinking_budget_fits_inside_max_tokens() -> None:
    sent = body(HI, reasoning_effort="high", max_tokens=3000)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2999}
    assert "thinking" not in body(HI, reasoning_effort="minimal")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"seed": 1}, "seed"),
        ({"n": 3}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"temperature": 1.5}, "temperature"),
        ({"frequency_penalty": 0.2}, "frequency_penalty"),
        ({"reasoning_effort": "low", "max_tokens": 1000}, "reasoning_effort"),
        ({"reasoning_effort": "low", "temperature": 0.2}, "temperature"),
        ({"reasoning_effort": "low", "tools": [TOOL], "tool_choice": "required"}, "tool_choice"),
        ({"tools": [TOOL], "response_format": {"type": "json_object"}}, "response_format"),
        ({"prediction": {"type": "content", "content": "x"}}, "prediction"),
    ],
)
def test_what_anthropic_cannot_carry_is_inexpressible(params, field) -> None:
    request = ChatRequest(HI, params)
    with pytest.raises(Inexpressible) as err:
        PROVIDER.chat_request(request, stream=False)
    assert err.value.field == field
    assert PROVIDER.inexpressible(request, stream=False) is not None


@pytest.mark.parametrize(
    ("messages", "params", "field"),
    [
        (HI, {"tool_choice": "required"}, "tool_choice"),
        (HI, {"reasoning_effort": "extreme"}, "reasoning_effort"),
        ([{"role": "tool", "content": "x"}], {}, "messages[0].tool_call_id"),
        ([{"role": "assistant", "tool_calls": [{"id": "a"}]}], {}, "messages[0].tool_calls[0]"),
        ([{"role": "robot", "content": "x"}], {}, "messages[0].role"),
    ],
)
def test_malformed_requests_name_the_field(messages, params, field) -> None:
    with pytest.raises(RequestInvalid) as err:
        PROVIDER.chat_request(ChatRequest(messages, params), stream=False)
    assert err.value.field == field


def test_namespace_fields_are_merged_last() -> None:
    sent = body(HI, anthropic={"top_k": 4, "max_tokens": 77}, gemini={"x": 1})
    assert (sent["top_k"], sent["max_tokens"]) == (4, 77) and "x" not in sent


STREAM = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_7",
            "model": "claude",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me."}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"a"'},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": ": 1}"},
    },
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_b", "name": "g", "input": {}},
    },
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}},
    {"type": "message_stop"},
]


def test_streamed_tool_use_becomes_openai_tool_call_deltas() -> None:
    parser = PROVIDER.stream_parser()
    chunks = [parser.parse_event(orjson.dumps(event)) for event in STREAM]
    assert chunks[-1] is None
    raws = [c.raw for c in chunks if c is not None and c.raw is not None]
    deltas = [d for r in raws for d in r["choices"][0]["delta"].get("tool_calls", [])]
    assert deltas == [
        {
            "index": 0,
            "id": "toolu_a",
            "type": "function",
            "function": {"name": "f", "arguments": ""},
        },
        {"index": 0, "function": {"arguments": '{"a"'}},
        {"index": 0, "function": {"arguments": ": 1}"}},
        {
            "index": 1,
            "id": "toolu_b",
            "type": "function",
            "function": {"name": "g", "arguments": ""},
        },
    ]
    assert all(r["id"] == "msg_7" and r["model"] == "claude" for r in raws)
    final = chunks[-2]
    assert final is not None and final.finish_reason == "tool_calls"
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.cached_tokens) == (100, 90)
    assert final.usage.completion_tokens == 30
