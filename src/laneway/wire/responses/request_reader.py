"""A caller's OpenAI Responses API request (``POST /v1/responses``), read into a chat request.

Its text and tools subset, on chat lanes.

laneway stores nothing, so a response stands alone: the whole conversation
comes in ``input`` each time. The subset translated onto a chat call:

- ``input``: a string, or a list of items: messages (``role`` ``user``,
  ``assistant``, ``system`` or ``developer``; ``content`` a string or
  ``input_text``, ``input_image`` (a URL or ``data:`` URL) and, for assistant
  history, ``output_text`` and ``refusal`` parts), ``function_call`` items and
  ``function_call_output`` items (text);
- ``instructions`` (a system message first), ``tools`` of type ``function``,
  ``tool_choice`` (``auto``, ``none``, ``required``, one function),
  ``parallel_tool_calls``, ``max_output_tokens``, ``temperature``, ``top_p``,
  ``text.format`` (``text``, ``json_object``, ``json_schema``),
  ``reasoning.effort``, ``user``, ``metadata`` (echoed, not sent upstream),
  ``store`` (accepted; nothing is stored) and ``stream``.

Refused with a 400 naming the field: ``previous_response_id`` and
``conversation`` (nothing is stored to continue from), built-in tools (web
search, file search, computer use...), file inputs, ``include``, ``background``,
``truncation: auto`` and any other field. ``reasoning`` items in ``input`` (the
model's earlier reasoning) are left out: chat sources take no such history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from laneway.core.errors import RequestInvalid
from laneway.core.shapes import chat_request
from laneway.core.types import ChatRequest
from laneway.wire.openai.chat_request import FieldTypes, check_types

_FIELDS: FieldTypes = {
    "model": ((str,), "a string"),
    "input": ((str, list), "a string or a list of input items"),
    "instructions": ((str,), "a string"),
    "tools": ((list,), "a list"),
    "tool_choice": ((str, dict), "a string or an object"),
    "parallel_tool_calls": ((bool,), "a boolean"),
    "max_output_tokens": ((int,), "an integer"),
    "temperature": ((int, float), "a number"),
    "top_p": ((int, float), "a number"),
    "text": ((dict,), "an object"),
    "reasoning": ((dict,), "an object"),
    "user": ((str,), "a string"),
    "metadata": ((dict,), "an object"),
    "store": ((bool,), "a boolean"),
    "stream": ((bool,), "a boolean"),
    "truncation": ((str,), "a string"),
}
_ECHOED = ("instructions", "metadata", "parallel_tool_calls", "temperature", "top_p", "text")
_ROLES = frozenset({"user", "assistant", "system", "developer"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "refusal", "text"})


@dataclass(frozen=True, slots=True)
class ResponsesCall:
    """A Responses API request read: the chat request, and what its ``response`` echoes."""

    request: ChatRequest
    echo: dict[str, Any]
    stream: bool


def read_response_request(data: dict[str, Any], forwarded: Mapping[str, str]) -> ResponsesCall:
    """Translate a Responses API body into a chat request (``forwarded``: headers to send on)."""
    for name in data:
        if name not in _FIELDS:
            raise RequestInvalid(name, "is not in the Responses API subset laneway translates")
    check_types(data, _FIELDS)
    if data.get("truncation") not in (None, "disabled"):
        raise RequestInvalid("truncation", "only 'disabled' is supported")
    messages: list[dict[str, Any]] = []
    if data.get("instructions"):
        messages.append({"role": "system", "content": data["instructions"]})
    messages.extend(_input(data.get("input")))
    request = chat_request(messages, _params(data), forwarded)
    echo = {name: data[name] for name in _ECHOED if data.get(name) is not None}
    echo["tools"] = data.get("tools") or []
    echo["tool_choice"] = data.get("tool_choice") or "auto"
    echo["max_output_tokens"] = data.get("max_output_tokens")
    return ResponsesCall(request, echo, data.get("stream") is True)


def _params(data: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name in ("temperature", "top_p", "parallel_tool_calls", "user"):
        if data.get(name) is not None:
            params[name] = data[name]
    if data.get("max_output_tokens") is not None:
        params["max_tokens"] = data["max_output_tokens"]
    if data.get("tools"):
        params["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(data["tools"])]
    if data.get("tool_choice") is not None:
        params["tool_choice"] = _tool_choice(data["tool_choice"])
    response_format = _format((data.get("text") or {}).get("format"))
    if response_format is not None:
        params["response_format"] = response_format
    effort = (data.get("reasoning") or {}).get("effort")
    if effort is not None:
        if not isinstance(effort, str):
            raise RequestInvalid("reasoning.effort", "must be a string")
        params["reasoning_effort"] = effort
    return params


def _input(value: object) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise RequestInvalid("input", "must be a string or a non-empty list of input items")
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise RequestInvalid(where, "must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(_message(item, where))
        elif kind == "function_call":
            _add_call(messages, item, where)
        elif kind == "function_call_output":
            messages.append(_call_output(item, where))
        elif kind != "reasoning":
            raise RequestInvalid(f"{where}.type", f"{kind!r} items are not translated")
    return messages


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise RequestInvalid(
            f"{where}.role", "must be 'user', 'assistant', 'system' or 'developer'"
        )
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise RequestInvalid(f"{where}.content", "must be a string or a list of content parts")
    parts = [_part(part, f"{where}.content[{i}]") for i, part in enumerate(content)]
    if role != "user":
        if any(part["type"] != "text" for part in parts):
            raise RequestInvalid(f"{where}.content", f"a {role} message takes text parts only")
        return {"role": role, "content": "".join(part["text"] for part in parts)}
    return {"role": role, "content": parts}


def _part(part: object, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if not isinstance(part, dict) or not isinstance(kind, str):
        raise RequestInvalid(where, "must be a content part with a 'type'")
    if kind in _TEXT_PARTS:
        key = "refusal" if kind == "refusal" else "text"
        return {"type": "text", "text": _string(part, key, where)}
    if kind == "input_image":
        image: dict[str, Any] = {"url": _string(part, "image_url", where)}
        if isinstance(part.get("detail"), str):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    raise RequestInvalid(f"{where}.type", f"{kind!r} parts are not translated")


def _add_call(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    """A function call joins the assistant message before it, as OpenAI's chat has it."""
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise RequestInvalid(f"{where}.arguments", "must be a string of JSON")
    function = {"name": _string(item, "name", where), "arguments": arguments}
    call = {"id": _string(item, "call_id", where), "type": "function", "function": function}
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _call_output(item: dict[str, Any], where: str) -> dict[str, Any]:
    output = item.get("output")
    if isinstance(output, list):
        output = "".join(
            _part(part, f"{where}.output[{i}]")["text"] for i, part in enumerate(output)
        )
    if not isinstance(output, str):
        raise RequestInvalid(f"{where}.output", "must be a string or a list of text parts")
    return {"role": "tool", "tool_call_id": _string(item, "call_id", where), "content": output}


def _string(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise RequestInvalid(f"{where}.{key}", "must be a string")
    return value


def _tool(tool: object, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise RequestInvalid(where, "must be an object")
    if tool.get("type") != "function":
        message = f"{tool.get('type')!r} tools run on OpenAI's side only; give function tools"
        raise RequestInvalid(f"{where}.type", message)
    function: dict[str, Any] = {"name": _string(tool, "name", where)}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def _tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": _string(choice, "name", "tool_choice")}}
    raise RequestInvalid("tool_choice", "must be 'auto', 'none', 'required' or a function")


def _format(spec: object) -> dict[str, Any] | None:
    if spec is None:
        return None
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        assert isinstance(spec, dict)
        schema = {
            key: spec[key] for key in ("name", "schema", "strict", "description") if key in spec
        }
        return {"type": "json_schema", "json_schema": schema}
    raise RequestInvalid("text.format.type", "must be 'text', 'json_object' or 'json_schema'")
