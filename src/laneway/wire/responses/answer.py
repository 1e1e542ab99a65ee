"""Answers and streams written in the shapes of OpenAI's Responses API.

A chat answer becomes a ``response`` whose ``output`` holds, in order, a
``reasoning`` item (the source's reasoning as ``reasoning_text`` content), a
``message`` item with one ``output_text`` part, and one ``function_call``
item per tool call. An answer cut by ``max_output_tokens`` or a content
filter is ``incomplete`` with its reason. Usage the source did not report is
``null``. A stream sends the Responses API's events: ``response.created``,
``response.in_progress``, per item ``output_item.added``/``done`` around its
deltas (``output_text``, ``reasoning_text``, ``function_call_arguments``), then
``response.completed`` (or ``response.incomplete``); a failure after the head
ends it with an ``error`` event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.types import ChatChunk, LLMResponse, Usage
from laneway.wire.blocks import (
    Block,
    BlockEvent,
    BlockReader,
    Grew,
    Opened,
    Signed,
    answer_parts,
)

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}
_ITEM_PREFIX = {"text": "msg", "reasoning": "rs", "redacted": "rs", "tool": "fc"}


def response_body(echo: Mapping[str, Any], result: LLMResponse, now: float) -> bytes:
    """The complete answer as a ``response`` object (``now``: Unix time, for its stamps).

    ``MalformedAnswer`` when a tool call is malformed.
    """
    parts = answer_parts(result)
    base = _base_id(parts.id, now)
    blocks: list[Block] = []
    if parts.reasoning:
        blocks.append(Block(len(blocks), "reasoning", parts.reasoning))
    if parts.text:
        blocks.append(Block(len(blocks), "text", parts.text))
    for call in parts.tool_calls:
        blocks.append(Block(len(blocks), "tool", call.arguments, call.id, call.name))
    output = [_item(base, block, "completed") for block in blocks]
    response = _response(echo, base, parts.model, parts.finish_reason, output, now)
    response["usage"] = responses_usage(result.usage)
    created = result.raw.get("created")
    if isinstance(created, int):
        response["created_at"] = created
    return orjson.dumps(response)


def _base_id(answer_id: str, now: float) -> str:
    return answer_id or f"laneway-{int(now * 1e9):x}"


def _response(
    echo: Mapping[str, Any],
    base: str,
    model: str,
    finish: str | None,
    output: list[dict[str, Any]],
    now: float,
    status: str | None = None,
) -> dict[str, Any]:
    reason = _INCOMPLETE.get(finish or "")
    return {
        "id": f"resp_{base}",
        "object": "response",
        "created_at": int(now),
        "status": status or ("incomplete" if reason else "completed"),
        "model": model,
        "output": output,
        "incomplete_details": {"reason": reason} if reason else None,
        "error": None,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "store": False,
        "truncation": "disabled",
        "usage": None,
        **echo,
    }


def _item_id(base: str, block: Block) -> str:
    return f"{_ITEM_PREFIX[block.kind]}_{base}_{block.index}"


def _item(base: str, block: Block, status: str) -> dict[str, Any]:
    item_id = _item_id(base, block)
    if block.kind == "text":
        content = [{"type": "output_text", "text": block.text, "annotations": []}]
        return {
            "type": "message",
            "id": item_id,
            "status": status,
            "role": "assistant",
            "content": content,
        }
    if block.kind == "reasoning":
        content = [{"type": "reasoning_text", "text": block.text}] if block.text else []
        return {
            "type": "reasoning",
            "id": item_id,
            "status": status,
            "summary": [],
            "content": content,
        }
    if block.kind == "redacted":
        encrypted = {"encrypted_content": block.text, "summary": [], "content": []}
        return {"type": "reasoning", "id": item_id, "status": status, **encrypted}
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": block.tool_id,
        "name": block.tool_name,
        "arguments": block.text,
        "status": status,
    }


def responses_usage(usage: Usage | None) -> dict[str, Any] | None:
    """Usage in the Responses API's fields; ``None`` when the source reported none."""
    if usage is None or not usage.known:
        return None
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


class ResponsesEventWriter:
    """Writes a stream of OpenAI chunks as the Responses API's events, numbered in order.

    ``now`` (Unix time when the stream began) stamps ``created_at``, and the
    ids when the source gave none.
    """

    def __init__(self, echo: Mapping[str, Any], now: float) -> None:
        self._echo = echo
        self._now = now
        self._reader = BlockReader()
        self._sequence = 0
        self._started = False

    def chunk(self, chunk: ChatChunk) -> bytes:
        """``response.created`` first, then the chunk's item events."""
        events = self._reader.read(chunk)
        head = self._start()
        return head + b"".join(self._block_events(event) for event in events)

    def end(self) -> bytes:
        """Close the open item, then ``response.completed`` (or ``.incomplete``)."""
        head = self._start()
        closing = b"".join(self._block_events(event) for event in self._reader.close())
        response = self._snapshot(None)
        response["usage"] = responses_usage(self._reader.usage)
        kind = f"response.{response['status']}"
        return head + closing + self._sse(kind, {"response": response})

    def error(self, described: dict[str, Any]) -> bytes:
        """An ``error`` event (the stream ends without ``response.completed``).

        ``described`` is laneway's OpenAI-shaped account, ``{"error": {...}}``.
        """
        error = described.get("error") or {}
        payload = {"code": error.get("code"), "message": error.get("message", ""), "param": None}
        return self._start() + self._sse("error", payload)

    def _snapshot(self, status: str | None) -> dict[str, Any]:
        reader = self._reader
        done = "in_progress" if status else "completed"
        output = [_item(self._base, block, done) for block in reader.blocks]
        return _response(
            self._echo, self._base, reader.model, reader.finish_reason, output, self._now, status
        )

    @property
    def _base(self) -> str:
        if not self._reader.id:
            self._reader.id = _base_id("", self._now)
        return self._reader.id

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        created = self._sse("response.created", {"response": self._snapshot("in_progress")})
        progress = self._sse("response.in_progress", {"response": self._snapshot("in_progress")})
        return created + progress

    def _block_events(self, event: BlockEvent) -> bytes:
        block = event.block
        ids = {"output_index": block.index, "item_id": _item_id(self._base, block)}
        if isinstance(event, Signed):
            return b""  # Anthropic's signature has no place here; a redacted block is an item
        if isinstance(event, Opened):
            return self._opened(block, ids)
        if isinstance(event, Grew):
            fields = {**ids, **_delta_fields(block), "delta": event.text}
            return self._sse(_DELTA_EVENTS[block.kind], fields)
        return self._closed(block, ids)

    def _opened(self, block: Block, ids: dict[str, Any]) -> bytes:
        empty = Block(block.index, block.kind, "", block.tool_id, block.tool_name)
        item = _item(self._base, empty, "in_progress")
        added = self._sse("response.output_item.added", {"output_index": block.index, "item": item})
        if block.kind != "text":
            return added
        part = {"type": "output_text", "text": "", "annotations": []}
        return added + self._sse(
            "response.content_part.added", {**ids, "content_index": 0, "part": part}
        )

    def _closed(self, block: Block, ids: dict[str, Any]) -> bytes:
        events: list[bytes] = []
        if block.kind == "tool":
            args = {**ids, "name": block.tool_name, "arguments": block.text}
            events.append(self._sse("response.function_call_arguments.done", args))
        elif block.kind == "reasoning":
            text = {**ids, "content_index": 0, "text": block.text}
            events.append(self._sse("response.reasoning_text.done", text))
        elif block.kind == "text":
            text = {**ids, "content_index": 0, "text": block.text, "logprobs": []}
            part = {"type": "output_text", "text": block.text, "annotations": []}
            events.append(self._sse("response.output_text.done", text))
            events.append(
                self._sse("response.content_part.done", {**ids, "content_index": 0, "part": part})
            )
        item = _item(self._base, block, "completed")
        done = {"output_index": block.index, "item": item}
        events.append(self._sse("response.output_item.done", done))
        return b"".join(events)

    def _sse(self, kind: str, payload: dict[str, Any]) -> bytes:
        event = {"type": kind, "sequence_number": self._sequence, **payload}
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


_DELTA_EVENTS = {
    "text": "response.output_text.delta",
    "reasoning": "response.reasoning_text.delta",
    "tool": "response.function_call_arguments.delta",
}


def _delta_fields(block: Block) -> dict[str, Any]:
    if block.kind == "text":
        return {"content_index": 0, "logprobs": []}
    if block.kind == "reasoning":
        return {"content_index": 0}
    return {}
