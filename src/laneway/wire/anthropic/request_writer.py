"""An OpenAI chat request written as an Anthropic Messages body (for an Anthropic source).

System and developer messages, wherever they stand, join the top-level
``system`` in order (Anthropic has no system turn). Tool results become
``tool_result`` blocks of a user turn, and consecutive turns of one role are
merged, as Anthropic wants all results of one tool turn in the next user turn.
``response_format`` is carried by a forced tool, ``json_answer``, whose input
is the JSON answer (the adapter turns it back into content); it cannot be
combined with the caller's own tools, nor with thinking. ``reasoning_effort``
becomes a thinking budget inside ``max_tokens`` (which, as OpenAI's
``max_completion_tokens``, bounds thinking and answer together); an
assistant's ``thinking_blocks`` (from an earlier Anthropic answer) go back
before its text and tool calls, as Anthropic wants on a thinking turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from laneway.core.errors import Inexpressible, RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.types import ChatRequest
from laneway.wire.openai.parts import (
    TRANSLATED,
    FunctionTool,
    Image,
    JsonAsk,
    Part,
    Text,
    ToolChoice,
    add_turn,
    content_parts,
    json_ask,
    namespaced,
    reasoning_budget,
    refuse_unhandled,
    text_only,
    tool_calls_of,
    tool_result_id,
    tools_and_choice,
)

WIRE = "anthropic"
JSON_TOOL = "json_answer"
"""The forced tool that carries ``response_format``; callers' tools may not use the name."""
MIN_THINKING = 1024
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

_HANDLED = TRANSLATED | {"parallel_tool_calls"}


def messages_body(
    request: ChatRequest, model: str, default_max_tokens: int | None
) -> dict[str, Any]:
    """The ``/v1/messages`` body (without ``stream``), or ``Inexpressible``/``RequestInvalid``."""
    params = request.params
    refuse_unhandled(params, _HANDLED, WIRE)
    system, turns = anthropic_turns(request.messages)
    body: dict[str, Any] = {"model": model, "messages": turns}
    if system:
        body["system"] = system
    body["max_tokens"] = _max_tokens(params, default_max_tokens)
    _sampling(params, body)
    budget = _thinking(params, body)
    _tools(params, body, thinking=budget is not None)
    if isinstance(params.get("user"), str):
        body["metadata"] = {"user_id": params["user"]}
    body.update(namespaced(params, WIRE))
    return body


def _max_tokens(params: Mapping[str, Any], default: int | None) -> int:
    value = params.get("max_completion_tokens", params.get("max_tokens", default))
    if value is None:
        raise RequestInvalid("max_tokens", "Anthropic requires it: pass it or set the source's")
    if not isinstance(value, int) or value < 1:
        raise RequestInvalid("max_tokens", "must be a positive integer")
    return value


def _sampling(params: Mapping[str, Any], body: dict[str, Any]) -> None:
    temperature = params.get("temperature")
    if temperature is not None:
        if temperature > 1:
            raise Inexpressible("temperature", "Anthropic takes 0 to 1")
        body["temperature"] = temperature
    if params.get("top_p") is not None:
        body["top_p"] = params["top_p"]
    stop = params.get("stop")
    if stop is not None:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else stop


def _thinking(params: Mapping[str, Any], body: dict[str, Any]) -> int | None:
    """A thinking budget inside ``max_tokens``; what thinking forbids is inexpressible."""
    budget = reasoning_budget(params.get("reasoning_effort"))
    if not budget:
        return None
    limit: int = body["max_tokens"]
    if limit <= MIN_THINKING:
        raise Inexpressible("reasoning_effort", f"thinking needs max_tokens above {MIN_THINKING}")
    if body.get("temperature", 1) != 1:
        raise Inexpressible("temperature", "Anthropic allows only 1 while thinking")
    if body.get("top_p", 1) < 0.95:
        raise Inexpressible("top_p", "Anthropic allows only 0.95 to 1 while thinking")
    budget = min(budget, limit - 1)
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return budget


def _tools(params: Mapping[str, Any], body: dict[str, Any], *, thinking: bool) -> None:
    tools, choice = tools_and_choice(params)
    ask = json_ask(params.get("response_format"))
    if ask is not None:
        if tools:
            raise Inexpressible("response_format", "JSON is a forced tool here: not with tools")
        if thinking:
            raise Inexpressible("response_format", "JSON is a forced tool here: not while thinking")
        tools, choice = [_json_tool(ask)], ToolChoice("named", JSON_TOOL)
    elif any(tool.name == JSON_TOOL for tool in tools):
        raise Inexpressible("tools", f"the name {JSON_TOOL!r} is reserved for JSON answers here")
    if not tools:
        return
    body["tools"] = [_tool(tool) for tool in tools]
    native = _tool_choice(choice, params.get("parallel_tool_calls") is False)
    if native is not None:
        if thinking and native["type"] in ("any", "tool"):
            raise Inexpressible("tool_choice", "Anthropic forces no tool while thinking")
        body["tool_choice"] = native


def _json_tool(ask: JsonAsk) -> FunctionTool:
    schema = ask.schema or {"type": "object"}
    if schema.get("type") != "object":
        raise Inexpressible("response_format", "Anthropic takes object schemas only")
    about = ask.description or f"Answer with the {ask.name} JSON object."
    return FunctionTool(JSON_TOOL, about, schema)


def _tool(tool: FunctionTool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = tool.parameters
    if tool.cache_control is not None:
        out["cache_control"] = tool.cache_control
    return out


def _tool_choice(choice: ToolChoice | None, single: bool) -> dict[str, Any] | None:
    if choice is None:
        return {"type": "auto", "disable_parallel_tool_use": True} if single else None
    natives: dict[str, dict[str, Any]] = {
        "auto": {"type": "auto"},
        "none": {"type": "none"},
        "required": {"type": "any"},
        "named": {"type": "tool", "name": choice.name},
    }
    native = natives[choice.mode]
    if single and choice.mode != "none":
        native["disable_parallel_tool_use"] = True
    return native


def anthropic_turns(
    messages: Sequence[ChatMessage],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``system`` blocks and the user/assistant turns (same-role neighbours merged)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if role in ("system", "developer"):
            parts = content_parts(message.get("content"), where)
            text_only(parts, where)
            system.extend(_text_block(part) for part in parts if isinstance(part, Text))
            continue
        blocks = _turn_blocks(role, message, where)
        add_turn(turns, "assistant" if role == "assistant" else "user", "content", blocks)
    for turn in turns:
        only = turn["content"]
        if len(only) == 1 and only[0]["type"] == "text" and "cache_control" not in only[0]:
            turn["content"] = only[0]["text"]
    return system, turns


def _turn_blocks(role: str, message: ChatMessage, where: str) -> list[dict[str, Any]]:
    if role == "user":
        return [_block(part) for part in content_parts(message.get("content"), where)]
    if role == "assistant":
        thoughts = _thinking_blocks(message.get("thinking_blocks"), where)
        parts = content_parts(message.get("content"), where)
        calls = tool_calls_of(message, where)
        uses = [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls
        ]
        return [*thoughts, *(_block(part) for part in parts), *uses]
    if role == "tool":
        text = text_only(content_parts(message.get("content"), where), where)
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": tool_result_id(message, where),
        }
        if text:
            result["content"] = text
        return [result]
    if role == "function":
        raise Inexpressible(f"{where}.role", "the deprecated function role has no equivalent")
    raise RequestInvalid(f"{where}.role", f"role {role!r} is not a chat role")


def _thinking_blocks(value: object, where: str) -> list[dict[str, Any]]:
    """An assistant's ``thinking_blocks`` (as Anthropic answers gave them), checked."""
    if value is None:
        return []
    blocks = value if isinstance(value, list) else [None]
    for index, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        signed = kind == "thinking" and isinstance(block.get("signature"), str)
        if not (signed or (kind == "redacted_thinking" and isinstance(block.get("data"), str))):
            raise RequestInvalid(
                f"{where}.thinking_blocks[{index}]",
                "must be a signed thinking block or a redacted_thinking block",
            )
    return list(blocks)


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return _text_block(part)
    return _image_block(part)


def _text_block(part: Text) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": part.text}
    if part.cache_control is not None:
        block["cache_control"] = part.cache_control
    return block


def _image_block(image: Image) -> dict[str, Any]:
    if image.url is not None:
        block: dict[str, Any] = {"type": "image", "source": {"type": "url", "url": image.url}}
    elif image.mime == "application/pdf":
        source = {"type": "base64", "media_type": image.mime, "data": image.data}
        block = {"type": "document", "source": source}
    elif image.mime in IMAGE_TYPES:
        source = {"type": "base64", "media_type": image.mime, "data": image.data}
        block = {"type": "image", "source": source}
    else:
        raise Inexpressible("messages", f"Anthropic takes no {image.mime} images")
    if image.cache_control is not None:
        block["cache_control"] = image.cache_control
    return block


COUNTED_FIELDS = ("messages", "system", "tools", "tool_choice", "thinking", "output_config")
"""The fields of a Messages API body ``/messages/count_tokens`` takes (besides ``model``)."""


def count_tokens_body(body: Mapping[str, Any], model: str) -> bytes:
    """``/messages/count_tokens``'s body for a Messages API ``body``, asking of ``model``."""
    payload = {name: body[name] for name in COUNTED_FIELDS if name in body}
    payload["model"] = model
    return orjson.dumps(payload)
