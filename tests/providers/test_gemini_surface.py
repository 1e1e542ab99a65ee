"""The Gemini adapter's translation of the chat surface, both ways (pure)."""

from __future__ import annotations

from typing import Any, cast

import orjson
import pytest
from pydantic import BaseModel

from laneway.core.errors import Inexpressible
from laneway.core.messages import ChatMessage
from laneway.core.transport import HttpResponse
from laneway.core.types import ChatRequest
from laneway.providers.gemini import GeminiProvider
from laneway.wire.gemini.schema import gemini_schema

PROVIDER = GeminiProvider("https://generativelanguage.googleapis.com/v1beta", "gemini-x", "k")
HI = [{"role": "user", "content": "Hi"}]
TOOL = {
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    },
}
BARE = {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}
SIGNED = {"google": {"thought_signature": "c2ln"}}


def body(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    http = PROVIDER.chat_request(
        ChatRequest(cast("list[ChatMessage]", messages), params), stream=False
    )
    return orjson.loads(http.body)  # type: ignore[no-any-return]


class Inner(BaseModel):
    size: int


class Outer(BaseModel):
    name: str
    inner: Inner
    maybe: str | None = None
    kind: str = "x"


def test_pydantic_schema_becomes_a_gemini_schema() -> None:
    schema = gemini_schema(Outer.model_json_schema(), "response_format")
    assert schema["type"] == "OBJECT"
    assert schema["properties"]["inner"] == {
        "properties": {"size": {"title": "Size", "type": "INTEGER"}},
        "required": ["size"],
        "title": "Inner",
        "type": "OBJECT",
    }
    assert schema["properties"]["maybe"]["nullable"] is True
    assert schema["properties"]["maybe"]["type"] == "STRING"


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}},
        {"$defs": {"N": {"properties": {"n": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"},
        {"type": "object", "properties": {"e": {"enum": [1, 2]}}},
        {"type": "object", "not": {"type": "string"}},
    ],
)
def test_schemas_gemini_cannot_express(schema) -> None:
    with pytest.raises(Inexpressible):
        gemini_schema(schema, "response_format")


def test_json_modes_and_thinking() -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "o", "schema": Outer.model_json_schema()}}
    config = body(HI, response_format=fmt, reasoning_effort="medium")["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["type"] == "OBJECT"
    assert config["thinkingConfig"] == {"thinkingBudget": 4096, "includeThoughts": True}
    plain = body(HI, response_format={"type": "json_object"})["generationConfig"]
    assert plain == {"responseMimeType": "application/json"}


def test_tools_choice_history_and_signatures() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 2}'}}
    messages: list[dict[str, Any]] = [
        *HI,
        {"role": "assistant", "content": "", "tool_calls": [{**call, "extra_content": SIGNED}]},
        {"role": "tool", "tool_call_id": "c1", "content": "not json"},
        {"role": "system", "content": "Late system."},
    ]
    sent = body(
        messages, tools=[TOOL, BARE], tool_choice={"type": "function", "function": {"name": "f"}}
    )
    declarations = sent["tools"][0]["functionDeclarations"]
    assert declarations[1] == {"name": "g"}
    assert declarations[0]["parameters"]["properties"]["a"] == {"type": "INTEGER"}
    assert sent["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}
    }
    assert sent["systemInstruction"] == {"parts": [{"text": "Late system."}]}
    _, model, answer = sent["contents"]
    assert model == {
        "role": "model",
        "parts": [{"functionCall": {"name": "f", "args": {"a": 2}}, "thoughtSignature": "c2ln"}],
    }
    assert answer["parts"] == [
        {"functionResponse": {"name": "f", "response": {"result": "not json"}}}
    ]


@pytest.mark.parametrize(
    ("messages", "params", "field"),
    [
        (HI, {"parallel_tool_calls": False, "tools": [TOOL]}, "parallel_tool_calls"),
        (HI, {"logit_bias": {"1": 2}}, "logit_bias"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/y"}}],
                }
            ],
            {},
            "messages[0].content",
        ),
        (
            HI,
            {"tools": [{"type": "function", "function": {"name": "1f"}}]},
            "tools[0].function.name",
        ),
    ],
)
def test_what_gemini_cannot_carry_is_inexpressible(messages, params, field) -> None:
    with pytest.raises(Inexpressible) as err:
        PROVIDER.chat_request(ChatRequest(messages, params), stream=False)
    assert err.value.field == field


def test_function_calls_come_back_as_tool_calls() -> None:
    answer = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "functionCall": {"name": "f", "args": {"a": 1}},
                            "thoughtSignature": "c2ln",
                        },
                        {"functionCall": {"name": "g", "args": {}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 9,
            "candidatesTokenCount": 4,
            "cachedContentTokenCount": 6,
        },
    }
    result = PROVIDER.parse_chat(HttpResponse(200, {}, orjson.dumps(answer)), 0.0)
    assert result.finish_reason == "tool_calls"
    first, second = result.tool_calls
    assert first["function"] == {"name": "f", "arguments": '{"a":1}'}
    assert first["extra_content"] == SIGNED
    assert first["id"] != second["id"]
    assert result.raw["choices"][0]["message"]["content"] is None
    assert (result.usage.cached_tokens, result.usage.cache_write_tokens) == (6, None)


def test_streamed_function_calls_are_numbered_across_chunks() -> None:
    parser = PROVIDER.stream_parser()

    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> Any:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if finish:
            candidate["finishReason"] = finish
        return parser.parse_event(orjson.dumps({"candidates": [candidate]}))

    first = chunk([{"functionCall": {"name": "f", "args": {"a": 1}}}])
    second = chunk([{"functionCall": {"name": "g"}}])
    last = chunk([{"text": ""}], "STOP")
    deltas = [c.raw["choices"][0]["delta"]["tool_calls"][0] for c in (first, second)]
    assert [(d["index"], d["function"]["name"], d["function"]["arguments"]) for d in deltas] == [
        (0, "f", '{"a":1}'),
        (1, "g", "{}"),
    ]
    assert last.finish_reason == "tool_calls"
