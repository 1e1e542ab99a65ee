"""OpenAI's ``chat.completion`` and ``chat.completion.chunk``, read and written.

This shape is laneway's neutral answer: every source's answer is read into a
``ChatResult`` whose ``raw`` is a ``chat.completion`` (native formats write
one with ``completion`` and ``chunk``), which library callers read and
``/v1/chat/completions`` serves. Usage is the upstream's own figures or
nothing: a missing ``usage`` is unknown, never zero.

An answer read keeps its bytes (``ChatResult.body``): a caller of this format
is given them as they came (``completion_body``), since rendering the parsed
answer again would only write the same JSON. Reading it is still one parse,
which is what checks it (a malformed answer fails the attempt, retried
elsewhere) and finds its usage, model and finish reason.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.passthrough import OPENAI_CHAT, AnswerBody
from laneway.core.results import ChatResult
from laneway.core.types import NO_USAGE, ChatChunk, LLMResponse, Usage
from laneway.core.usage import openai_usage_dict
from laneway.wire.decoding import load_event, load_json, reasoning_of, token_count

DONE = b"[DONE]"
"""The ``data:`` payload that ends an OpenAI stream."""


def read_completion(body: bytes, model: str) -> ChatResult:
    """A ``chat.completion`` as a ``ChatResult`` (``model`` when the answer names none)."""
    data = load_json(body, "chat answer")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise AttemptFailure(FailureKind.MALFORMED, "chat answer has no choices")
    message = choices[0].get("message") or {}
    usage = openai_usage(data.get("usage"))
    reasoning_text = message.get("reasoning_content") or message.get("reasoning")
    calls = message.get("tool_calls")
    return ChatResult(
        content=message.get("content") or "",
        usage=usage,
        model=str(data.get("model") or model),
        finish_reason=choices[0].get("finish_reason"),
        reasoning_content=reasoning_text if isinstance(reasoning_text, str) else None,
        reasoning=reasoning_of(bool(reasoning_text), usage),
        tool_calls=calls if isinstance(calls, list) else [],
        raw=data,
        body=AnswerBody(OPENAI_CHAT, body),
    )


def read_completion_chunk(data: bytes) -> ChatChunk | None:
    """One ``chat.completion.chunk`` event's payload; ``None`` for ``[DONE]``.

    ``ValueError`` for an event that is not JSON; an ``error`` event is a cut attempt.
    """
    if data.strip() == DONE:
        return None
    event = load_event(data)
    if "error" in event:
        raise AttemptFailure(FailureKind.CUT, f"upstream sent an error event: {event['error']}")
    choices = event.get("choices") or []
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    delta = first.get("delta") or {}
    reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
    usage = openai_usage(event["usage"]) if event.get("usage") else None
    return ChatChunk(
        content=delta.get("content") or "",
        reasoning_content=reasoning if isinstance(reasoning, str) else "",
        finish_reason=first.get("finish_reason"),
        usage=usage,
        model=event.get("model"),
        raw=event,
        tool_call_delta=bool(delta.get("tool_calls")),
    )


def openai_usage(data: object) -> Usage:
    """Read an OpenAI ``usage`` object; a missing one is unknown, not zero."""
    if not isinstance(data, dict):
        return NO_USAGE
    details = data.get("completion_tokens_details") or {}
    prompt_details = data.get("prompt_tokens_details") or {}
    return Usage(
        prompt_tokens=token_count(data.get("prompt_tokens")),
        completion_tokens=token_count(data.get("completion_tokens")),
        total_tokens=token_count(data.get("total_tokens")),
        reasoning_tokens=token_count(details.get("reasoning_tokens")),
        cached_tokens=token_count(prompt_details.get("cached_tokens")),
        cache_write_tokens=token_count(prompt_details.get("cache_write_tokens")),
        source="provider",
    )


def openai_completion(result: ChatResult, answer_id: str | None, created: float) -> dict[str, Any]:
    """A native answer as OpenAI's ``chat.completion``: what the gateway serves."""
    content = result.content or (None if result.tool_calls else "")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if result.reasoning_content:
        message["reasoning_content"] = result.reasoning_content
    if result.tool_calls:
        message["tool_calls"] = result.tool_calls
    choice = {"index": 0, "message": message, "finish_reason": result.finish_reason}
    out: dict[str, Any] = {
        "id": answer_id or "",
        "object": "chat.completion",
        "created": int(created),
        "model": result.model,
        "choices": [choice],
    }
    usage = openai_usage_dict(result.usage)
    if usage is not None:
        out["usage"] = usage
    return out


def openai_chunk(
    delta: dict[str, Any],
    *,
    finish_reason: str | None = None,
    usage: Usage | None = None,
    answer_id: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """A native stream event as OpenAI's ``chat.completion.chunk`` (id/model when known)."""
    out: dict[str, Any] = {"id": answer_id} if answer_id else {}
    out["object"] = "chat.completion.chunk"
    if model:
        out["model"] = model
    out["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    rendered = None if usage is None else openai_usage_dict(usage)
    if rendered is not None:
        out["usage"] = rendered
    return out


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One OpenAI tool call of a complete answer."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_call_delta(
    index: int, fragment: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """A streamed tool-call delta: the first names the call, the rest add argument text."""
    function: dict[str, Any] = {"arguments": fragment}
    if name is not None:
        function = {"name": name, **function}
    delta: dict[str, Any] = {"index": index}
    if call_id is not None:
        delta.update(id=call_id, type="function")
    delta["function"] = function
    return {"tool_calls": [delta]}


def completion_body(result: LLMResponse) -> bytes:
    """The ``/v1/chat/completions`` answer: the upstream's, usage as the call knows it.

    Upstream figures stay as the upstream sent them (details included): an
    OpenAI-shaped source's answer goes back as it came. An estimate is
    written in OpenAI's shape; a ``usage: null`` goes.
    """
    relayed = result.answer_body
    if relayed is not None and relayed.wire == OPENAI_CHAT and result.usage.source == "provider":
        return relayed.body
    raw = result.raw
    usage = result.usage
    if usage.source == "estimated" or ("usage" in raw and raw["usage"] is None):
        raw = {k: v for k, v in raw.items() if k != "usage"}
        if usage.source == "estimated":
            raw["usage"] = openai_usage_dict(usage)
    return orjson.dumps(raw)


def completion_chunk_event(raw: dict[str, Any]) -> bytes:
    """One ``chat.completion.chunk`` as a server-sent event."""
    return b"data: " + orjson.dumps(raw) + b"\n\n"
