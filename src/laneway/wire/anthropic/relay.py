"""When an Anthropic caller's Messages body may go to an Anthropic source as it came.

The pass-through fast path for ``/v1/messages`` on an ``anthropic`` source:
the caller's body is sent as it was sent (written again by orjson from the
parsed body), only its ``model`` changed, so what the translation through
OpenAI's shape loses (``cache_control`` marks, a thinking
budget's exact size, the order of blocks) reaches the source. A body is sent
as it came only when it holds nothing the translation would have changed for
the source to take it: no ``output_config`` (carried as a forced tool), no
top-level ``cache_control``, ``metadata`` of ``user_id`` only, tools of the
fields the Messages API takes, thinking as the API takes it (a budget within
``max_tokens``, nothing it forbids), signed thinking blocks only (another source's
reasoning is left out by the translation), no empty text block, tool results
first in their user turn, and turns that alternate. Anything else is written
afresh by ``request_writer``, as before.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from laneway.core.passthrough import ANTHROPIC_MESSAGES
from laneway.core.types import ChatRequest
from laneway.wire.anthropic.request_writer import MIN_THINKING

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
    }
)
_TOOL_FIELDS = frozenset({"name", "description", "input_schema", "cache_control", "type"})


def sendable_as_sent(data: dict[str, Any]) -> bool:
    """Whether a valid Messages body (``read_messages`` took it) may go to a source as it came."""
    if not _TOP.issuperset(data) or not set(data.get("metadata") or {}) <= {"user_id"}:
        return False
    if not _thinking_as_sent(data):
        return False
    if not all(_TOOL_FIELDS.issuperset(tool) for tool in data.get("tools") or []):
        return False
    roles = [message["role"] for message in data["messages"]]
    if any(a == b for a, b in itertools.pairwise(roles)):
        return False
    return all(_blocks_as_sent(message) for message in data["messages"])


def _thinking_as_sent(data: dict[str, Any]) -> bool:
    """No thinking, or thinking the Messages API takes as asked (the translation would refit it).

    A budget of at least ``MIN_THINKING`` within ``max_tokens``, with nothing
    thinking forbids (a temperature but 1, ``top_k``, ``top_p`` under 0.95, a
    forced tool).
    """
    thinking = data.get("thinking")
    if thinking is None or thinking.get("type") == "disabled":
        return True
    budget = thinking.get("budget_tokens")
    if thinking.get("type") != "enabled" or not MIN_THINKING <= budget < data["max_tokens"]:
        return False
    choice = (data.get("tool_choice") or {}).get("type", "auto")
    temperature, top_p = data.get("temperature"), data.get("top_p")
    return (
        temperature in (None, 1)
        and data.get("top_k") is None
        and (top_p is None or top_p >= 0.95)
        and choice in ("auto", "none")
    )


def _blocks_as_sent(message: dict[str, Any]) -> bool:
    content = message["content"]
    if isinstance(content, str):
        return content != ""
    kinds = [block["type"] for block in content]
    results = kinds.count("tool_result")
    if any(kind != "tool_result" for kind in kinds[:results]):
        return False
    for block in content:
        kind = block["type"]
        if kind == "text" and not block["text"]:
            return False
        if kind == "thinking" and not block.get("signature"):
            return False
    return True


def relayed_messages_body(request: ChatRequest, model: str, *, stream: bool) -> bytes | None:
    """The caller's own Messages body with ``model`` as its model; ``None`` to write it afresh.

    Only for the call the caller asked: its ``stream`` field must say ``stream``.
    """
    caller = request.caller_body
    if caller is None or caller.wire != ANTHROPIC_MESSAGES or not caller.holds(request):
        return None
    if (caller.fields.get("stream") is True) != stream:
        return None
    return orjson.dumps({**caller.fields, "model": model})
