"""Anthropic's stream events, read (a source's stream) and written (a caller's stream).

Read: events are ``event:``/``data:`` pairs whose payload names its own
``type``, so only the ``data:`` payloads are read. A reader per stream
numbers the tool calls (Anthropic numbers all content blocks), keeps
``message_start``'s usage for the final ``message_delta``, whose usage may
carry output tokens only, and turns ``json_answer``'s input fragments into
content; ``message_stop`` ends the stream.

Written: ``message_start``, one ``content_block_start`` /
``content_block_delta`` / ``content_block_stop`` run per block, then
``message_delta`` (stop reason and cumulative usage, which the SDKs read) and
``message_stop``; ``message_start`` has no figures yet.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.types import ChatChunk
from laneway.wire.anthropic.answer import (
    anthropic_error_body,
    anthropic_finish_reason,
    anthropic_usage,
    anthropic_usage_fields,
    message_head,
    stop_reason,
)
from laneway.wire.anthropic.request_writer import JSON_TOOL
from laneway.wire.blocks import BlockEvent, BlockReader, Closed, Grew, Opened, Signed
from laneway.wire.decoding import load_event
from laneway.wire.openai.chat_answer import openai_chunk, tool_call_delta

_NOTHING = ChatChunk()
"""What events without content for the caller (``ping``, block boundaries) parse to."""
_DELTAS = {"text": ("text_delta", "text"), "reasoning": ("thinking_delta", "thinking")}


class MessagesEventReader:
    """One Anthropic stream's events as OpenAI chunks."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.answer_id: str | None = None
        self.opening_usage: dict[str, Any] = {}
        self.blocks: dict[int, int | None] = {}
        """Content block index -> tool call index (``None``: the ``json_answer`` block)."""
        self.json_answer = False
        self.thinking: list[str] = []
        """The open thinking block's text, sent whole with its signature when it closes."""

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one event payload; ``message_stop`` ends the stream."""
        event = load_event(data)
        kind = event.get("type")
        if kind == "message_stop":
            return None
        if kind == "error":
            raise AttemptFailure(
                FailureKind.CUT, f"upstream sent an error event: {event.get('error')}"
            )
        if kind == "message_start":
            return self._started(event.get("message") or {})
        if kind == "content_block_start":
            return self._block_start(event.get("index"), event.get("content_block") or {})
        if kind == "content_block_delta":
            return self._block_delta(event.get("index"), event.get("delta") or {})
        if kind == "message_delta":
            return self._finished(event)
        return _NOTHING

    def _chunk(self, delta: dict[str, Any], **fields: Any) -> ChatChunk:
        raw = openai_chunk(delta, answer_id=self.answer_id, model=self.model, **fields)
        return ChatChunk(
            content=delta.get("content") or "",
            reasoning_content=delta.get("reasoning_content") or "",
            finish_reason=fields.get("finish_reason"),
            usage=fields.get("usage"),
            raw=raw,
            tool_call_delta="tool_calls" in delta,
        )

    def _started(self, message: dict[str, Any]) -> ChatChunk:
        self.model = str(message.get("model") or self.model)
        self.answer_id = message.get("id")
        usage = message.get("usage")
        self.opening_usage = usage if isinstance(usage, dict) else {}
        raw = openai_chunk(
            {"role": "assistant", "content": ""}, answer_id=self.answer_id, model=self.model
        )
        return ChatChunk(model=self.model, raw=raw)

    def _block_start(self, index: object, block: dict[str, Any]) -> ChatChunk:
        if block.get("type") != "tool_use" or not isinstance(index, int):
            return self._text(block)
        if block.get("name") == JSON_TOOL:
            self.blocks[index] = None
            self.json_answer = True
            return _NOTHING
        number = sum(1 for n in self.blocks.values() if n is not None)
        self.blocks[index] = number
        name, call_id = str(block.get("name", "")), str(block.get("id", ""))
        return self._chunk(tool_call_delta(number, "", call_id=call_id, name=name))

    def _block_delta(self, index: object, delta: dict[str, Any]) -> ChatChunk:
        if delta.get("type") != "input_json_delta" or not isinstance(index, int):
            return self._text(delta)
        fragment = str(delta.get("partial_json") or "")
        number = self.blocks.get(index, -1)
        if not fragment or number == -1:
            return _NOTHING
        if number is None:
            return self._chunk({"content": fragment})
        return self._chunk(tool_call_delta(number, fragment))

    def _text(self, block: dict[str, Any]) -> ChatChunk:
        """A text or thinking block's start, or a delta of one; other kinds carry nothing.

        A thinking block's signature (its last delta) sends the whole block as
        ``thinking_blocks``, which a caller hands back for Anthropic's next turn.
        """
        kind = block.get("type")
        if kind in ("text", "text_delta") and block.get("text"):
            return self._chunk({"content": str(block["text"])})
        if kind in ("thinking", "thinking_delta") and block.get("thinking"):
            self.thinking.append(str(block["thinking"]))
            return self._chunk({"reasoning_content": str(block["thinking"])})
        if kind == "signature_delta":
            signed = {"type": "thinking", "thinking": "".join(self.thinking)}
            self.thinking = []
            return self._chunk(
                {"thinking_blocks": [{**signed, "signature": block.get("signature")}]}
            )
        if kind == "redacted_thinking":
            return self._chunk({"thinking_blocks": [block]})
        return _NOTHING

    def _finished(self, event: dict[str, Any]) -> ChatChunk:
        """``message_delta``: the stop reason, and the usage of the whole answer."""
        finish = anthropic_finish_reason((event.get("delta") or {}).get("stop_reason"))
        if self.json_answer and finish == "tool_calls":
            finish = "stop"
        closing = event.get("usage")
        usage = None
        if isinstance(closing, dict):
            usage = anthropic_usage({**self.opening_usage, **closing})
        return self._chunk({}, finish_reason=finish, usage=usage)


def anthropic_sse(kind: str, payload: dict[str, Any]) -> bytes:
    """One Anthropic event: its ``event:`` line names the payload's ``type``."""
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


class MessagesEventWriter:
    """Writes a stream of OpenAI chunks as Anthropic's events (``message_start``, blocks...)."""

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
        stop = anthropic_sse("message_stop", {"type": "message_stop"})
        return self._start() + closing + anthropic_sse("message_delta", delta) + stop

    def error(self, status: int, described: dict[str, Any]) -> bytes:
        """An ``error`` event (``anthropic_error_body``), which the SDKs raise as an API error."""
        return self._start() + anthropic_sse("error", anthropic_error_body(status, described))

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        message = message_head(self._reader.id, self._reader.model, [], None)
        message["usage"] = anthropic_usage_fields(None)
        return anthropic_sse("message_start", {"type": "message_start", "message": message})

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
            return anthropic_sse("content_block_start", start)
        if isinstance(event, Grew):
            kind, key = _DELTAS.get(event.block.kind, ("input_json_delta", "partial_json"))
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": kind, key: event.text},
            }
            return anthropic_sse("content_block_delta", delta)
        assert isinstance(event, Closed)
        return anthropic_sse("content_block_stop", {"type": "content_block_stop", "index": index})


def _signed(event: Signed) -> bytes:
    """A thinking block's ``signature_delta``, or a whole ``redacted_thinking`` block's start."""
    index = event.block.index
    if event.block.kind == "redacted":
        start = {"type": "content_block_start", "index": index, "content_block": event.signed}
        return anthropic_sse("content_block_start", start)
    delta = {"type": "signature_delta", "signature": event.signed["signature"]}
    return anthropic_sse(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )
