"""Reading the parts of an OpenAI chat request that native wire formats translate.

Shared by the Anthropic and Gemini adapters: content parts (text, images),
function tools and ``tool_choice``, ``response_format``, reasoning effort, and
the tool calls of the history. Malformed input is ``RequestInvalid`` naming
the field (the caller's fault, whatever the source); well-formed input a wire
format cannot carry is ``Inexpressible``, which skips the source instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from laneway.core.errors import Inexpressible, RequestInvalid
from laneway.core.messages import ChatMessage

NAMESPACES = frozenset({"anthropic", "gemini"})
"""Request keys holding provider-specific fields, forwarded only to that provider's sources."""

TRANSLATED = frozenset(
    {
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "tools",
        "tool_choice",
        "response_format",
        "reasoning_effort",
        "user",
        "stream",
        "stream_options",
        *NAMESPACES,
    }
)
"""Parameters every native adapter translates (or, for stream options, sets itself)."""

REASONING_BUDGETS = {"minimal": 0, "none": 0, "low": 1024, "medium": 4096, "high": 16384}
"""Thinking-token budgets for OpenAI's ``reasoning_effort`` on APIs that take a budget."""

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)(?:;[^,]*)?;base64,(.*)$", re.DOTALL)
_BASE64_HEAD = re.compile(r"^[A-Za-z0-9+/\s]{4,256}")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Image:
    """An ``image_url`` part: base64 ``data`` with its ``mime`` type, or an https ``url``."""

    mime: str | None = None
    data: str | None = None
    url: str | None = None
    cache_control: Any = None


@dataclass(frozen=True, slots=True)
class Text:
    """A text part (``cache_control`` is Anthropic's prompt-cache marker, passed through)."""

    text: str
    cache_control: Any = None


Part = Text | Image


@dataclass(frozen=True, slots=True)
class FunctionTool:
    """One function the model may call."""

    name: str
    description: str | None
    parameters: dict[str, Any]
    cache_control: Any = None


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """``tool_choice``: ``auto``, ``none``, ``required``, or ``named`` with the function's name."""

    mode: Literal["auto", "none", "required", "named"]
    name: str | None = None


@dataclass(frozen=True, slots=True)
class JsonAsk:
    """``response_format`` asking for JSON: any object (``schema`` None) or one schema."""

    schema: dict[str, Any] | None
    name: str = "json_answer"
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """An assistant's earlier tool call in the history, its arguments parsed."""

    id: str
    name: str
    arguments: dict[str, Any]
    extra: dict[str, Any]
    """The call's other fields (``extra_content`` carries Gemini's thought signature)."""


def content_parts(content: object, where: str) -> list[Part]:
    """A message's ``content`` as parts: a string is one text part; empty texts go.

    Native APIs refuse empty text blocks, and an empty text says nothing.
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(content)] if content else []
    if not isinstance(content, list):
        raise RequestInvalid(f"{where}.content", "must be a string or a list of content parts")
    parts = [_part(part, f"{where}.content[{index}]") for index, part in enumerate(content)]
    return [part for part in parts if not isinstance(part, Text) or part.text]


def _part(part: object, where: str) -> Part:
    if not isinstance(part, dict):
        raise RequestInvalid(where, "must be an object")
    kind = part.get("type", "text")
    marker = part.get("cache_control")
    if kind in ("text", "refusal"):
        text = part.get(kind)
        if not isinstance(text, str):
            raise RequestInvalid(f"{where}.{kind}", "must be a string")
        return Text(text, marker)
    if kind == "image_url":
        return image_of(part.get("image_url"), f"{where}.image_url", marker)
    raise Inexpressible(f"{where}.type", f"{kind!r} parts have no equivalent here")


def image_of(value: object, where: str, cache_control: Any = None) -> Image:
    """An ``image_url`` object (or bare URL string): a base64 data URL or an https URL."""
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str):
        raise RequestInvalid(f"{where}.url", "must be a string")
    if url.startswith("https://"):
        return Image(url=url, cache_control=cache_control)
    match = _DATA_URL.match(url)
    if match is None:
        raise RequestInvalid(f"{where}.url", "must be an https URL or a base64 data: URL")
    data = match.group(2).strip()
    if not _BASE64_HEAD.match(data):
        raise RequestInvalid(f"{where}.url", "the data: URL does not hold base64 data")
    return Image(mime=match.group(1).lower(), data=data, cache_control=cache_control)


def text_only(parts: Sequence[Part], where: str) -> str:
    """The text of parts that must all be text (system prompts, tool results)."""
    if any(isinstance(part, Image) for part in parts):
        raise Inexpressible(f"{where}.content", "images have no equivalent in this role here")
    return "".join(part.text for part in parts if isinstance(part, Text))


def function_tools(tools: object) -> list[FunctionTool]:
    """``tools``: function tools only, each with a valid name and an object schema."""
    if not isinstance(tools, list):
        raise RequestInvalid("tools", "must be a list")
    out: list[FunctionTool] = []
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise RequestInvalid(where, "must be an object")
        if tool.get("type", "function") != "function":
            raise Inexpressible(f"{where}.type", f"{tool.get('type')!r} tools have no equivalent")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise RequestInvalid(f"{where}.function", "must be an object")
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise RequestInvalid(f"{where}.function.name", "must match ^[a-zA-Z0-9_-]{1,64}$")
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise RequestInvalid(f"{where}.function.description", "must be a string")
        parameters = function.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict):
            raise RequestInvalid(f"{where}.function.parameters", "must be a JSON schema object")
        out.append(FunctionTool(name, description, parameters, tool.get("cache_control")))
    return out


def tool_choice_of(value: object, tools: Sequence[FunctionTool]) -> ToolChoice | None:
    """``tool_choice``; a named function must be one of ``tools``."""
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return ToolChoice(value)
    function = value.get("function") if isinstance(value, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise RequestInvalid(
            "tool_choice", "must be auto, none, required or {type: function, function: {name}}"
        )
    if name not in {tool.name for tool in tools}:
        raise RequestInvalid("tool_choice.function.name", f"{name!r} is not one of the tools")
    return ToolChoice("named", name)


def tools_and_choice(params: Mapping[str, Any]) -> tuple[list[FunctionTool], ToolChoice | None]:
    """``tools`` and ``tool_choice``; a choice other than ``none`` needs tools."""
    tools = function_tools(params["tools"]) if params.get("tools") is not None else []
    choice = tool_choice_of(params.get("tool_choice"), tools)
    if choice is not None and choice.mode != "none" and not tools:
        raise RequestInvalid("tool_choice", "needs tools")
    return tools, choice


def add_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> None:
    """Append a turn, merged into the last one when it has the same role; empty ones go.

    Native APIs want all results of one tool turn in the next user turn, and
    an empty turn says nothing.
    """
    if not items:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})


def json_ask(value: object) -> JsonAsk | None:
    """``response_format``: ``None`` for text, else what JSON the caller wants."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return JsonAsk(None)
    if kind != "json_schema" or not isinstance(value, dict):
        raise RequestInvalid("response_format.type", "must be text, json_object or json_schema")
    spec = value.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
        raise RequestInvalid("response_format.json_schema", "must be an object with a schema")
    name = spec.get("name")
    description = spec.get("description")
    return JsonAsk(
        spec.get("schema") or {"type": "object"},
        name if isinstance(name, str) and _NAME.match(name) else "json_answer",
        description if isinstance(description, str) else None,
    )


def reasoning_budget(effort: object) -> int | None:
    """The thinking budget for ``reasoning_effort`` (0: no thinking); ``None`` when unset."""
    if effort is None:
        return None
    if effort not in REASONING_BUDGETS:
        raise RequestInvalid("reasoning_effort", f"must be one of {', '.join(REASONING_BUDGETS)}")
    return REASONING_BUDGETS[str(effort)]


def tool_calls_of(message: ChatMessage, where: str) -> list[ToolCall]:
    """An assistant message's ``tool_calls``, arguments parsed into objects."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise RequestInvalid(f"{where}.tool_calls", "must be a list")
    out: list[ToolCall] = []
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise RequestInvalid(at, "must be {id, type: function, function: {name, arguments}}")
        name, call_id = function.get("name"), call.get("id")
        if not isinstance(name, str) or not isinstance(call_id, str):
            raise RequestInvalid(at, "needs a string id and function.name")
        arguments = _arguments(function.get("arguments"), f"{at}.function.arguments")
        extra = {k: v for k, v in call.items() if k not in ("id", "type", "function")}
        out.append(ToolCall(call_id, name, arguments, extra))
    return out


def _arguments(text: object, where: str) -> dict[str, Any]:
    if text is None or text == "":
        return {}
    if not isinstance(text, str):
        raise RequestInvalid(where, "must be a JSON string")
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RequestInvalid(where, "is not valid JSON") from exc
    if not isinstance(value, dict):
        raise RequestInvalid(where, "must encode a JSON object")
    return value


def tool_result_id(message: ChatMessage, where: str) -> str:
    """A ``tool`` message's ``tool_call_id``."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise RequestInvalid(f"{where}.tool_call_id", "must be the id of an earlier tool call")
    return call_id


_NOOPS: dict[str, tuple[object, ...]] = {
    "n": (1,),
    "logprobs": (False,),
    "frequency_penalty": (0, 0.0),
    "presence_penalty": (0, 0.0),
    "logit_bias": ({},),
    "parallel_tool_calls": (True,),
}
"""Values that ask for nothing beyond the default, so any wire format carries them."""


def refuse_unhandled(params: Mapping[str, Any], handled: frozenset[str], wire: str) -> None:
    """Refuse the parameters ``wire`` does not handle, unless null or at their no-op value."""
    for name, value in params.items():
        if name in handled or value is None or value in _NOOPS.get(name, ()):
            continue
        raise Inexpressible(name, f"has no equivalent in the {wire} wire format")


def namespaced(params: Mapping[str, Any], wire: str) -> dict[str, Any]:
    """The caller's ``{wire: {...}}`` fields for this provider (an object, or nothing)."""
    own = params.get(wire)
    if own is None:
        return {}
    if not isinstance(own, dict):
        raise RequestInvalid(wire, f"must be an object of {wire} request fields")
    return own
