"""The shapes of request parts laneway reads, checked before anything reads them.

Every endpoint that takes OpenAI-shaped input (chat messages, content parts,
tool definitions) checks it here first, so no later code path meets a
``text`` that is a number or a value nested past what the JSON encoder takes:
each violation is a ``RequestInvalid`` naming the field, i.e. a 400. Fields
laneway does not read pass through unchecked, except for their nesting depth,
which bounds every value of the body.

The checks are ``isinstance`` tests over what the request holds, no schema
library: a one-message chat costs a few microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from laneway.core.errors import RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.types import ChatRequest

MAX_DEPTH = 64
"""Nesting of objects and lists a body may reach (the JSON encoder stops at 254)."""

_IMAGE_PART_TYPES = ("image_url",)


def chat_request(
    messages: object, params: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> ChatRequest:
    """Validate caller messages into a ``ChatRequest`` (errors name the field).

    The one door for chat input: the library's ``chat``, ``chat_stream`` and
    ``structured``, batch jobs, and each of the gateway's chat endpoints.
    """
    return ChatRequest(check_messages(messages), dict(params), headers or {})


def check_depth(value: object, limit: int = MAX_DEPTH, where: str = "body") -> None:
    """Refuse ``value`` when objects and lists nest deeper than ``limit`` levels.

    Walks level by level without recursion, so the check itself cannot hit
    the interpreter's recursion limit whatever it is given.
    """
    level: list[Any] = [value]
    for _ in range(limit):
        deeper: list[Any] = []
        for item in level:
            if type(item) is dict:
                deeper.extend(v for v in item.values() if type(v) is dict or type(v) is list)
            elif type(item) is list:
                deeper.extend(v for v in item if type(v) is dict or type(v) is list)
        if not deeper:
            return
        level = deeper
    raise RequestInvalid(where, f"nests deeper than {limit} levels of objects and lists")


def check_messages(messages: object, where: str = "messages") -> list[ChatMessage]:
    """``messages`` as a non-empty list of well-shaped chat messages (the typed structure)."""
    if not isinstance(messages, list) or not messages:
        raise RequestInvalid(where, "must be a non-empty list")
    for index, message in enumerate(messages):
        if not _role_and_text(message):
            check_message(message, f"{where}[{index}]")
    return cast("list[ChatMessage]", messages)


def _role_and_text(message: object) -> bool:
    """A message of a string ``role`` and string ``content`` only: nothing more to check.

    The usual message, so it is passed without building the field names an
    error would report (a string formatting or two per message).
    """
    return (
        type(message) is dict
        and len(message) == 2
        and type(message.get("role")) is str
        and type(message.get("content")) is str
    )


def check_message(message: object, where: str) -> None:
    """One chat message: a string ``role``, and content, name and tool fields as OpenAI's."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise RequestInvalid(where, "must be an object with a string 'role'")
    check_content(message.get("content"), f"{where}.content")
    for name in ("name", "tool_call_id"):
        _optional_string(message, name, where)
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        _tool_calls(tool_calls, f"{where}.tool_calls")


def check_content(content: object, where: str) -> None:
    """A message's content: ``null``, a string, or a list of typed parts."""
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise RequestInvalid(where, "must be a string or a list of content parts")
    for index, part in enumerate(content):
        check_part(part, f"{where}[{index}]")


def check_part(part: object, where: str) -> None:
    """One content part: an object with a string ``type``; text and image parts in full."""
    if not isinstance(part, dict):
        raise RequestInvalid(where, "must be an object")
    kind = part.get("type")
    if not isinstance(kind, str):
        raise RequestInvalid(f"{where}.type", "must be a string")
    if kind == "text" and not isinstance(part.get("text"), str):
        raise RequestInvalid(f"{where}.text", "must be a string")
    if kind in _IMAGE_PART_TYPES:
        image = part.get(kind)
        url = image.get("url") if isinstance(image, dict) else image
        if not isinstance(url, str):
            raise RequestInvalid(f"{where}.{kind}", "must be an object with a string 'url'")


def check_tools(tools: object, where: str = "tools") -> None:
    """Tool definitions: objects with a string ``type``; a function's name and schema."""
    if tools is None:
        return
    if not isinstance(tools, list):
        raise RequestInvalid(where, "must be a list")
    for index, tool in enumerate(tools):
        at = f"{where}[{index}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise RequestInvalid(at, "must be an object with a string 'type'")
        if tool["type"] == "function":
            _function(tool.get("function"), f"{at}.function", schema="parameters")


def check_strings(value: object, where: str) -> None:
    """A string, or a list of strings (``stop``)."""
    if value is None or isinstance(value, str):
        return
    if not isinstance(value, list):
        raise RequestInvalid(where, "must be a string or a list of strings")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise RequestInvalid(f"{where}[{index}]", "must be a string")


def _tool_calls(calls: object, where: str) -> None:
    if not isinstance(calls, list):
        raise RequestInvalid(where, "must be a list")
    for index, call in enumerate(calls):
        at = f"{where}[{index}]"
        if not isinstance(call, dict):
            raise RequestInvalid(at, "must be an object")
        _optional_string(call, "id", at)
        _optional_string(call, "type", at)
        if call.get("function") is not None:
            _function(call["function"], f"{at}.function", schema=None)


def _function(function: object, where: str, *, schema: str | None) -> None:
    """A function (of a tool definition, or of a tool call with string ``arguments``)."""
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise RequestInvalid(where, "must be an object with a string 'name'")
    _optional_string(function, "description", where)
    if schema is None:
        _optional_string(function, "arguments", where)
    elif function.get(schema) is not None and not isinstance(function[schema], dict):
        raise RequestInvalid(f"{where}.{schema}", "must be an object (a JSON Schema)")


def _optional_string(data: Mapping[str, Any], name: str, where: str) -> None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise RequestInvalid(f"{where}.{name}", "must be a string")
