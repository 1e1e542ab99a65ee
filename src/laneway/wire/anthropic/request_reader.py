"""A caller's Anthropic Messages API request (``POST /v1/messages``), read into a chat request.

The body is translated into OpenAI's chat shape, which every source adapter
takes, so the ``anthropic`` SDKs (and tools built on them) work against a lane
whatever its sources speak. Translated: ``system`` (a string or text blocks),
text and image blocks (base64 and URL sources), ``tool_use`` and
``tool_result`` history (as assistant ``tool_calls`` and ``tool`` messages),
``tools``, ``tool_choice`` (``auto``, ``any``, ``tool``, ``none``,
``disable_parallel_tool_use``), ``max_tokens``, ``stop_sequences``,
``output_config.format`` (a JSON schema, as ``response_format``
``json_schema``), ``output_config.effort`` (as ``reasoning_effort``),
``thinking`` (a manual budget below 4,096 tokens asks for ``reasoning_effort:
low``, below 16,384 ``medium``, else ``high``; ``adaptive`` leaves the choice
to the source), ``metadata.user_id`` (as ``user``), and from older clients
``temperature``, ``top_p`` and ``top_k`` (passed on as is).

Signed ``thinking`` and ``redacted_thinking`` blocks in the history go back
as the assistant message's ``thinking_blocks``, which an Anthropic source
needs before the tool calls of a thinking turn; unsigned ones (reasoning
another source gave, which nothing can verify) are left out, and so are
``cache_control`` marks (caching hints that do not change the answer), unless
the body goes to an Anthropic source as it came (``wire.anthropic.relay``).
Refused with a 400 naming the field: document blocks, images inside a
``tool_result``, Anthropic's server tools (web search, code execution...),
and any field laneway does not know (``container``, ``service_tier``,
``speed``...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.errors import RequestInvalid
from laneway.core.passthrough import ANTHROPIC_MESSAGES, CallerBody
from laneway.core.shapes import chat_request
from laneway.core.types import ChatRequest
from laneway.wire.anthropic.relay import sendable_as_sent
from laneway.wire.blocks import signed_blocks
from laneway.wire.openai.chat_request import FieldTypes, check_types

_FIELDS: FieldTypes = {
    "max_tokens": ((int,), "an integer"),
    "messages": ((list,), "a list"),
    "system": ((str, list), "a string or a list of text blocks"),
    "stop_sequences": ((list,), "a list of strings"),
    "stream": ((bool,), "a boolean"),
    "temperature": ((int, float), "a number"),
    "top_p": ((int, float), "a number"),
    "top_k": ((int,), "an integer"),
    "tools": ((list,), "a list"),
    "tool_choice": ((dict,), "an object"),
    "metadata": ((dict,), "an object"),
    "thinking": ((dict,), "an object"),
    "output_config": ((dict,), "an object"),
    "cache_control": ((dict,), "an object"),
    "model": ((str,), "a string"),
}
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def read_messages(data: dict[str, Any], forwarded: Mapping[str, str]) -> ChatRequest:
    """Translate a Messages API body into a chat request (``forwarded``: headers to send on).

    Whether it asks for a stream is its ``stream`` field, read by the caller.
    ``data`` itself rides along for an Anthropic source when it may go as it
    was sent (``wire.anthropic.relay``); it is not changed.
    """
    for name in data:
        if name not in _FIELDS:
            raise RequestInvalid(name, "is not a Messages API field laneway can translate")
    check_types(data, _FIELDS)
    if not isinstance(data.get("max_tokens"), int) or data["max_tokens"] < 1:
        raise RequestInvalid("max_tokens", "is required: a positive integer")
    messages = _system(data.get("system"))
    raw_messages = data.get("messages")
    if not raw_messages:
        raise RequestInvalid("messages", "must be a non-empty list")
    for index, message in enumerate(raw_messages):
        messages.extend(_message(message, f"messages[{index}]"))
    request = chat_request(messages, _params(data), forwarded)
    if not sendable_as_sent(data):
        return request
    caller = CallerBody(ANTHROPIC_MESSAGES, data, request.messages, request.params)
    return ChatRequest(request.messages, request.params, request.headers, caller)


def _params(data: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"max_tokens": data["max_tokens"]}
    for name in ("temperature", "top_p", "top_k"):
        if data.get(name) is not None:
            params[name] = data[name]
    stops = data.get("stop_sequences")
    if stops:
        if not all(isinstance(stop, str) for stop in stops):
            raise RequestInvalid("stop_sequences", "must be a list of strings")
        params["stop"] = stops
    user = (data.get("metadata") or {}).get("user_id")
    if isinstance(user, str):
        params["user"] = user
    if data.get("tools"):
        params["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(data["tools"])]
    if data.get("tool_choice") is not None:
        params.update(_tool_choice(data["tool_choice"]))
    output = data.get("output_config") or {}
    effort = output.get("effort") or _effort(data.get("thinking"))
    if effort is not None:
        if not isinstance(effort, str):
            raise RequestInvalid("output_config.effort", "must be a string")
        params["reasoning_effort"] = effort
    if output.get("format") is not None:
        params["response_format"] = _format(output["format"])
    return params


def _format(spec: object) -> dict[str, Any]:
    """A JSON schema output format as OpenAI's ``response_format``."""
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or spec.get("type") != "json_schema":
        raise RequestInvalid("output_config.format.type", "must be 'json_schema'")
    if not isinstance(schema, dict):
        raise RequestInvalid("output_config.format.schema", "must be a JSON schema object")
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


def _system(system: object) -> list[dict[str, Any]]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    assert isinstance(system, list)
    return [{"role": "system", "content": _texts(system, "system")}]


def _texts(blocks: list[Any], where: str) -> str:
    """The text of a list of text blocks."""
    texts: list[str] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise RequestInvalid(f"{where}[{index}]", "must be a text block")
        texts.append(_string(block, "text", f"{where}[{index}]"))
    return "".join(texts)


def _message(message: object, where: str) -> list[dict[str, Any]]:
    if not isinstance(message, dict):
        raise RequestInvalid(where, "must be an object with 'role' and 'content'")
    role = message.get("role")
    content = message.get("content")
    if role not in ("user", "assistant"):
        raise RequestInvalid(f"{where}.role", "must be 'user' or 'assistant'")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise RequestInvalid(f"{where}.content", "must be a string or a list of content blocks")
    if role == "assistant":
        return [_assistant(content, f"{where}.content")]
    return _user(content, f"{where}.content")


def _user(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """Tool results first (as ``tool`` messages, as OpenAI wants them), then the rest."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        at = f"{where}[{index}]"
        kind = _block_type(block, at)
        if kind == "tool_result":
            results.append(_tool_result(block, at))
        elif kind == "text":
            parts.append({"type": "text", "text": _string(block, "text", at)})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": _image_url(block, at)}})
        else:
            raise RequestInvalid(f"{at}.type", f"{kind!r} blocks cannot be sent to a chat lane")
    return [*results, {"role": "user", "content": parts}] if parts else results


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    """Text and tool calls; signed thinking goes back as ``thinking_blocks`` (for Anthropic)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thoughts: list[Any] = []
    for index, block in enumerate(blocks):
        at = f"{where}[{index}]"
        kind = _block_type(block, at)
        if kind == "text":
            texts.append(_string(block, "text", at))
        elif kind == "tool_use":
            calls.append(_tool_use(block, at))
        elif kind in _THINKING_BLOCKS:
            thoughts.append(block)
        else:
            raise RequestInvalid(f"{at}.type", f"{kind!r} blocks cannot be sent to a chat lane")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    signed = signed_blocks(thoughts)
    if any(block.get("signature") or block.get("data") for block in signed):
        message["thinking_blocks"] = list(signed)
    return message


def _block_type(block: object, where: str) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(kind, str):
        raise RequestInvalid(where, "must be a content block with a 'type'")
    return kind


def _string(block: dict[str, Any], key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise RequestInvalid(f"{where}.{key}", "must be a string")
    return value


def _image_url(block: dict[str, Any], where: str) -> str:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64":
        assert isinstance(source, dict)
        media = _string(source, "media_type", f"{where}.source")
        return f"data:{media};base64,{_string(source, 'data', f'{where}.source')}"
    if kind == "url":
        assert isinstance(source, dict)
        return _string(source, "url", f"{where}.source")
    raise RequestInvalid(f"{where}.source", "must be a base64 or url image source")


def _tool_use(block: dict[str, Any], where: str) -> dict[str, Any]:
    arguments = block.get("input", {})
    if not isinstance(arguments, dict):
        raise RequestInvalid(f"{where}.input", "must be an object")
    function = {
        "name": _string(block, "name", where),
        "arguments": orjson.dumps(arguments).decode(),
    }
    return {"id": _string(block, "id", where), "type": "function", "function": function}


def _tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A ``tool`` message; an error result says so first, since OpenAI has no flag for it."""
    content = block.get("content", "")
    if isinstance(content, list):
        content = _texts(content, f"{where}.content")
    elif not isinstance(content, str):
        raise RequestInvalid(f"{where}.content", "must be a string or a list of text blocks")
    if block.get("is_error") is True:
        content = f"Error: {content}"
    return {
        "role": "tool",
        "tool_call_id": _string(block, "tool_use_id", where),
        "content": content,
    }


def _tool(tool: object, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise RequestInvalid(where, "must be an object")
    kind = tool.get("type")
    if kind not in (None, "custom"):
        message = f"is Anthropic's server tool {kind!r}, which runs on Anthropic's side only"
        raise RequestInvalid(f"{where}.type", message)
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise RequestInvalid(f"{where}.input_schema", "must be a JSON schema object")
    function: dict[str, Any] = {"name": _string(tool, "name", where), "parameters": schema}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if isinstance(tool.get("strict"), bool):
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    kind = choice.get("type")
    out: dict[str, Any] = {}
    if kind == "tool":
        out["tool_choice"] = {
            "type": "function",
            "function": {"name": _string(choice, "name", "tool_choice")},
        }
    elif isinstance(kind, str) and kind in _TOOL_CHOICES:
        out["tool_choice"] = _TOOL_CHOICES[kind]
    else:
        raise RequestInvalid("tool_choice.type", "must be 'auto', 'any', 'tool' or 'none'")
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out


def _effort(thinking: object) -> str | None:
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise RequestInvalid("thinking.budget_tokens", "must be a positive integer")
    if budget < 4096:
        return "low"
    return "medium" if budget < 16384 else "high"
