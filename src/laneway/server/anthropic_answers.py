"""Answers, streams and errors in the shapes of Anthropic's Messages API.

Content comes back as blocks: ``thinking`` (the source's reasoning: an
Anthropic source's signed blocks as they came, ``redacted_thinking``
included; another source's reasoning with an empty ``signature``), ``text``,
then one ``tool_use`` per tool call. Stop reasons map from
OpenAI's: ``stop`` is ``end_turn``, ``length`` is ``max_tokens``,
``tool_calls`` is ``tool_use``, ``content_filter`` is ``refusal``. OpenAI's
format does not say which stop sequence ended an answer, so ``stop_sequence``
is always ``null`` and a stop sequence reads as ``end_turn``.

Usage follows Anthropic's split: ``input_tokens`` excludes cache reads and
writes, which are ``cache_read_input_tokens`` and
``cache_creation_input_tokens``. Figures the source did not report are
``null``, never 0; a stream's ``message_start`` has no figures yet (they come
in ``message_delta``, as cumulative totals, which the SDKs read).
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.types import ChatChunk, LLMResponse, Usage
from laneway.server.answer_parts import (
    BlockEvent,
    BlockReader,
    Closed,
    Grew,
    Opened,
    Signed,
    answer_parts,
)
from laneway.server.asgi import Reply
from laneway.server.errors import describe_error, internal_error_reply

_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_DELTAS = {"text": ("text_delta", "text"), "reasoning": ("thinking_delta", "thinking")}


def message_body(result: LLMResponse) -> bytes:
    """The complete answer as an Anthropic ``message``."""
    parts = answer_parts(result)
    content: list[dict[str, Any]] = list(parts.thinking_blocks)
    if parts.reasoning and not content:
        content.append({"type": "thinking", "thinking": parts.reasoning, "signature": ""})
    if parts.text:
        content.append({"type": "text", "text": parts.text})
    content.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input()}
        for call in parts.tool_calls
    )
    message = _message(parts.id, parts.model, content, parts.finish_reason)
    message["usage"] = anthropic_usage_fields(result.usage)
    return orjson.dumps(message)


def _message(
    answer_id: str, model: str, content: list[dict[str, Any]], finish: str | None
) -> dict[str, Any]:
    return {
        "id": answer_id if answer_id.startswith("msg_") else f"msg_{answer_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(finish),
        "stop_sequence": None,
    }


def stop_reason(finish_reason: str | None) -> str | None:
    """Anthropic's stop reason for OpenAI's finish reason (an unknown one passes as is)."""
    if finish_reason is None:
        return None
    return _STOP_REASONS.get(finish_reason, finish_reason)


def anthropic_usage_fields(usage: Usage | None) -> dict[str, Any]:
    """Usage in Anthropic's fields; ``null`` where the source reported nothing."""
    if usage is None or not usage.known:
        return {"input_tokens": None, "output_tokens": None}
    cached, written = usage.cached_tokens, usage.cache_write_tokens
    prompt = usage.prompt_tokens
    out: dict[str, Any] = {
        "input_tokens": None if prompt is None else prompt - (cached or 0) - (written or 0),
        "output_tokens": usage.completion_tokens,
    }
    if cached is not None:
        out["cache_read_input_tokens"] = cached
    if written is not None:
        out["cache_creation_input_tokens"] = written
    return out


def _sse(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


class AnthropicEncoder:
    """Writes a stream as Anthropic's events: ``message_start``, blocks, ``message_delta``."""

    def __init__(self) -> None:
        self._reader = BlockReader()
        self._started = False

    def chunk(self, chunk: ChatChunk) -> bytes:
        """``message_start`` first, then the chunk's block events."""
        events = self._reader.read(chunk)
        return self._start() + b"".join(self._block_event(event) for event in events)

    def end(self) -> bytes:
        """Close the open block, then ``message_delta`` and ``message_stop``."""
        closing = b"".join(self._block_event(event) for event in self._reader.close())
        delta = {
            "type": "message_delta",
            "delta": {
                "stop_reason": stop_reason(self._reader.finish_reason),
                "stop_sequence": None,
            },
            "usage": anthropic_usage_fields(self._reader.usage),
        }
        stop = _sse("message_stop", {"type": "message_stop"})
        return self._start() + closing + _sse("message_delta", delta) + stop

    def failed(self, exc: Exception, lane: str) -> bytes:
        """An ``error`` event, which the SDKs raise as an API error."""
        status, body, _ = describe_error(exc, lane)
        return self._start() + _sse("error", _error_body(status, body))

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        message = _message(self._reader.id, self._reader.model, [], None)
        message["usage"] = anthropic_usage_fields(None)
        return _sse("message_start", {"type": "message_start", "message": message})

    def _block_event(self, event: BlockEvent) -> bytes:
        index = event.block.index
        if isinstance(event, Signed):
            return _signed(event)
        if isinstance(event, Opened):
            block = event.block
            content: dict[str, Any]
            if block.kind == "redacted":
                return b""  # its data comes with its Signed event
            if block.kind == "tool":
                content = {"type": "tool_use", "id": block.tool_id, "name": block.tool_name}
                content["input"] = {}
            elif block.kind == "reasoning":
                content = {"type": "thinking", "thinking": "", "signature": ""}
            else:
                content = {"type": "text", "text": ""}
            start = {"type": "content_block_start", "index": index, "content_block": content}
            return _sse("content_block_start", start)
        if isinstance(event, Grew):
            kind, key = _DELTAS.get(event.block.kind, ("input_json_delta", "partial_json"))
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": kind, key: event.text},
            }
            return _sse("content_block_delta", delta)
        assert isinstance(event, Closed)
        return _sse("content_block_stop", {"type": "content_block_stop", "index": index})


def _signed(event: Signed) -> bytes:
    """A thinking block's ``signature_delta``, or a whole ``redacted_thinking`` block's start."""
    index = event.block.index
    if event.block.kind == "redacted":
        start = {"type": "content_block_start", "index": index, "content_block": event.signed}
        return _sse("content_block_start", start)
    delta = {"type": "signature_delta", "signature": event.signed["signature"]}
    return _sse(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def anthropic_error(exc: Exception, lane: str) -> Reply:
    """The error answer in Anthropic's shape, with laneway's account of the call beside it."""
    status, body, headers = describe_error(exc, lane)
    return Reply(status, orjson.dumps(_error_body(status, body)), headers)


def anthropic_crash(lane: str, request_id: str) -> Reply:
    """The 500 for an unexpected exception, in Anthropic's shape."""
    reply = internal_error_reply(lane, request_id)
    return Reply(500, orjson.dumps(_error_body(500, orjson.loads(reply.body))), reply.headers)


def _error_body(status: int, described: dict[str, Any]) -> dict[str, Any]:
    error = described.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    kind = _ERROR_TYPES.get(status, "api_error")
    out: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": str(message or "")}}
    if "laneway" in described:
        out["laneway"] = described["laneway"]
    return out
