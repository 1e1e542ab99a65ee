"""What the sim answers to tools, JSON formats and images in an OpenAI-shaped request.

The rules are deterministic, so tests can assert on them:

- with `tools`, unless `tool_choice` is `none` or the last message is a tool
  result, the answer calls tools instead of talking: the named function, else
  every function offered (only the first when `parallel_tool_calls` is false),
  with arguments made from each function's parameter schema;
- `response_format` `json_schema` is answered with an instance of the schema,
  `json_object` with `{"answer": "sim answer"}`;
- each image part adds `IMAGE_TOKENS` prompt tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from laneway.sim._sample import FREE_OBJECT, sample_instance

if TYPE_CHECKING:
    from laneway.sim._request import Request

IMAGE_TOKENS = 258
"""Prompt tokens per image (what Gemini charges a small image)."""
JSON_OBJECT = orjson.dumps(FREE_OBJECT).decode()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call of a sim answer; `arguments` is JSON text."""

    id: str
    name: str
    arguments: str


def _functions(request: Request) -> list[dict[str, Any]]:
    tools = request.get("tools")
    found = [t.get("function") for t in tools or [] if isinstance(t, dict)]
    return [f for f in found if isinstance(f, dict) and isinstance(f.get("name"), str)]


def _last_role(request: Request) -> object:
    messages = request.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    return last.get("role") if isinstance(last, dict) else None


def planned_tool_calls(request: Request, number: int) -> tuple[ToolCall, ...]:
    """The calls the answer makes (none when it should talk)."""
    functions = _functions(request)
    choice = request.get("tool_choice", "auto")
    if not functions or choice == "none" or _last_role(request) == "tool":
        return ()
    if isinstance(choice, dict):
        named = (choice.get("function") or {}).get("name")
        functions = [f for f in functions if f["name"] == named]
    elif request.get("parallel_tool_calls") is False:
        functions = functions[:1]
    return tuple(
        ToolCall(
            f"call_sim_{number}_{index}",
            function["name"],
            orjson.dumps(sample_instance(function.get("parameters") or {}) or {}).decode(),
        )
        for index, function in enumerate(functions)
    )


def json_content(request: Request) -> str | None:
    """The JSON answer `response_format` asks for, or None for a text answer."""
    format_ = request.get("response_format")
    kind = format_.get("type") if isinstance(format_, dict) else None
    if kind == "json_object":
        return JSON_OBJECT
    if kind == "json_schema":
        spec = format_.get("json_schema") if isinstance(format_, dict) else None
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return orjson.dumps(sample_instance(schema or {"type": "object"})).decode()
    return None


def image_count(request: Request) -> int:
    """How many image parts the messages carry."""
    messages = request.get("messages")
    count = 0
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    return count
