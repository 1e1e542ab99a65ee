"""Check a Messages API request field by field, as Anthropic's API does.

`problem` names the first field the real API would refuse (unknown keys,
wrong types, out-of-range sampling, a `tool_result` that answers no
`tool_use`, a `tool_use` left unanswered, thinking with what it forbids), so a
translation bug in an adapter shows up as the 400 it would get in production.
"""

from __future__ import annotations

import re
from typing import Any

from laneway.sim._refused import Refused, first_problem

_TOP = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "stop_sequences",
        "temperature",
        "top_p",
        "top_k",
        "stream",
        "tools",
        "tool_choice",
        "metadata",
        "thinking",
        "service_tier",
    }
)
_BLOCKS = {
    "user": frozenset({"text", "image", "document", "tool_result"}),
    "assistant": frozenset({"text", "tool_use", "thinking", "redacted_thinking"}),
}
_MEDIA = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_CHOICES = frozenset({"auto", "any", "tool", "none"})


def problem(body: dict[str, Any]) -> str | None:
    """What the real API would refuse in `body`, or None."""
    return first_problem(_check, body)


def _need(ok: bool, message: str) -> None:
    if not ok:
        raise Refused(message)


def _check(body: dict[str, Any]) -> None:
    for key in body:
        _need(key in _TOP, f"{key}: Extra inputs are not permitted")
    _need(isinstance(body.get("model"), str), "model: Field required")
    max_tokens = body.get("max_tokens")
    _need(isinstance(max_tokens, int) and max_tokens >= 1, "max_tokens: Field required")
    for name in ("temperature", "top_p"):
        value = body.get(name, 0)
        _need(isinstance(value, int | float) and 0 <= value <= 1, f"{name}: must be 0 to 1")
    stops = body.get("stop_sequences", [])
    _need(isinstance(stops, list) and all(isinstance(s, str) for s in stops), "stop_sequences")
    if "system" in body:
        _system(body["system"])
    metadata = body.get("metadata", {})
    _need(isinstance(metadata, dict) and set(metadata) <= {"user_id"}, "metadata: user_id only")
    names = _tools(body.get("tools"))
    _tool_choice(body.get("tool_choice"), names)
    _thinking(body)
    _messages(body.get("messages"))
    if (body.get("thinking") or {}).get("type") == "enabled":
        _thinking_turn(body["messages"])


def _system(system: object) -> None:
    if isinstance(system, str):
        return
    if not isinstance(system, list):
        raise Refused("system: Input should be a valid string or list")
    for index, block in enumerate(system):
        _text_block(block, f"system.{index}")


def _text_block(block: object, where: str) -> None:
    _need(isinstance(block, dict) and block.get("type") == "text", f"{where}: text blocks only")
    assert isinstance(block, dict)
    text = block.get("text")
    _need(isinstance(text, str) and text != "", f"{where}: text content blocks must be non-empty")
    for key in block:
        _need(key in ("type", "text", "cache_control", "citations"), f"{where}.{key}: Extra inputs")
    _cache_control(block, where)


def _cache_control(block: dict[str, Any], where: str) -> None:
    if "cache_control" in block:
        marker = block["cache_control"]
        ok = isinstance(marker, dict) and marker.get("type") == "ephemeral"
        _need(ok, f"{where}.cache_control: type must be ephemeral")


def _tools(tools: object) -> set[str]:
    if tools is None:
        return set()
    _need(isinstance(tools, list), "tools: Input should be a valid list")
    names: set[str] = set()
    assert isinstance(tools, list)
    for index, tool in enumerate(tools):
        where = f"tools.{index}"
        _need(isinstance(tool, dict), f"{where}: Input should be an object")
        for key in tool:
            allowed = ("name", "description", "input_schema", "cache_control", "type")
            _need(key in allowed, f"{where}.{key}: Extra inputs are not permitted")
        name = tool.get("name")
        _need(isinstance(name, str) and bool(_TOOL_NAME.match(name)), f"{where}.name: bad name")
        schema = tool.get("input_schema")
        ok = isinstance(schema, dict) and schema.get("type") == "object"
        _need(ok, f"{where}.input_schema.type: Input should be 'object'")
        _cache_control(tool, where)
        names.add(name)
    return names


def _tool_choice(choice: object, names: set[str]) -> None:
    if choice is None:
        return
    _need(bool(names), "tool_choice may only be specified while providing tools")
    _need(isinstance(choice, dict) and choice.get("type") in _CHOICES, "tool_choice.type")
    assert isinstance(choice, dict)
    for key in choice:
        allowed = ("type", "name", "disable_parallel_tool_use")
        _need(key in allowed, f"tool_choice.{key}: Extra inputs are not permitted")
    if choice["type"] == "tool":
        _need(choice.get("name") in names, "tool_choice.name: names no tool of the request")


def _thinking(body: dict[str, Any]) -> None:
    thinking = body.get("thinking")
    if thinking is None or thinking == {"type": "disabled"}:
        return
    ok = isinstance(thinking, dict) and thinking.get("type") == "enabled"
    _need(ok, "thinking.type: Input should be 'enabled' or 'disabled'")
    budget = thinking.get("budget_tokens")
    _need(isinstance(budget, int) and budget >= 1024, "thinking.budget_tokens: at least 1024")
    _need(budget < body["max_tokens"], "max_tokens must be greater than thinking.budget_tokens")
    _need(body.get("temperature", 1) == 1, "temperature may only be set to 1 when thinking")
    _need(body.get("top_p", 1) >= 0.95, "top_p must be 0.95 or above when thinking")
    choice = (body.get("tool_choice") or {}).get("type")
    _need(
        choice not in ("any", "tool"),
        "Thinking may not be enabled when tool_choice forces tool use",
    )


def _thinking_turn(messages: list[dict[str, Any]]) -> None:
    """While thinking, the last assistant turn that used tools must open with its thinking."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index]["content"]
        if messages[index]["role"] != "assistant" or not isinstance(content, list):
            continue
        if any(block["type"] == "tool_use" for block in content):
            first = content[0]["type"]
            _need(
                first in ("thinking", "redacted_thinking"),
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{first}`. When `thinking` is enabled, a final `assistant` message "
                "must start with a thinking block.",
            )
            return


def _messages(messages: object) -> None:
    _need(
        isinstance(messages, list) and bool(messages), "messages: at least one message is required"
    )
    assert isinstance(messages, list)
    pending: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        _need(isinstance(message, dict), f"{where}: Input should be an object")
        role = message.get("role")
        _need(role in _BLOCKS, f"{where}.role: Input should be 'user' or 'assistant'")
        final = index == len(messages) - 1
        blocks = _blocks(message.get("content"), where, role, final)
        answered = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        if pending:
            _need(
                role == "user" and pending <= answered,
                f"{where}: tool_use ids were found without tool_result blocks immediately after",
            )
        _need(answered <= pending, f"{where}: unexpected tool_use_id found in tool_result blocks")
        pending = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    _need(not pending, "the last message's tool_use blocks have no tool_result")


def _blocks(content: object, where: str, role: str, final: bool) -> list[dict[str, Any]]:
    if isinstance(content, str):
        ok = content != "" or (role == "assistant" and final)
        _need(ok, f"{where}: all messages must have non-empty content except the final assistant")
        return []
    _need(isinstance(content, list) and bool(content), f"{where}.content: must be non-empty")
    assert isinstance(content, list)
    for index, block in enumerate(content):
        at = f"{where}.content.{index}"
        kind = block.get("type") if isinstance(block, dict) else None
        _need(kind in _BLOCKS[role], f"{at}.type: {kind!r} is not allowed in {role} messages")
        assert isinstance(block, dict)
        _block(block, at)
    return content


def _block(block: dict[str, Any], where: str) -> None:
    kind = block["type"]
    if kind == "text":
        _text_block(block, where)
    elif kind in ("image", "document"):
        _source(block.get("source"), where, kind)
        _cache_control(block, where)
    elif kind == "thinking":
        ok = isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
        _need(ok, f"{where}: thinking blocks need thinking and signature")
    elif kind == "tool_use":
        ok = isinstance(block.get("id"), str) and isinstance(block.get("name"), str)
        _need(
            ok and isinstance(block.get("input"), dict), f"{where}: tool_use needs id, name, input"
        )
    elif kind == "tool_result":
        _need(isinstance(block.get("tool_use_id"), str), f"{where}.tool_use_id: Field required")
        content = block.get("content", "")
        _need(isinstance(content, str | list), f"{where}.content: string or blocks")


def _source(source: object, where: str, kind: str) -> None:
    _need(isinstance(source, dict), f"{where}.source: Field required")
    assert isinstance(source, dict)
    if source.get("type") == "url":
        _need(str(source.get("url", "")).startswith("https://"), f"{where}.source.url")
        return
    _need(source.get("type") == "base64", f"{where}.source.type: base64 or url")
    media = source.get("media_type")
    allowed = _MEDIA if kind == "image" else frozenset({"application/pdf"})
    _need(media in allowed, f"{where}.source.media_type: Input should be one of {sorted(allowed)}")
    _need(isinstance(source.get("data"), str) and bool(source["data"]), f"{where}.source.data")
