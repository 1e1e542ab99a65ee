"""OpenAI-shaped chat answers read as parts, for the wire formats that write them back.

``MalformedAnswer`` marks an answer that cannot be written back (a tool
call's arguments that are no object): the server answers it with a 502.

Every source's answer reaches the server in OpenAI's ``chat.completion`` shape
(native adapters translate to it), so Anthropic's and the Responses API's
answers are written from the same parts: reasoning, text and tool calls. A
stream is read chunk by chunk into blocks that open, grow and close, which is
how both of those formats stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from laneway.core.types import ChatChunk, LLMResponse, Usage

BlockKind = Literal["reasoning", "redacted", "text", "tool"]


class MalformedAnswer(ValueError):
    """An upstream's answer that a wire format cannot write back (its message says why)."""


@dataclass(frozen=True, slots=True)
class AnswerToolCall:
    """One function call of an answer; ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str

    def input(self) -> dict[str, Any]:
        """The arguments as an object (``{}`` for none); 502 when the model wrote no object."""
        if not self.arguments.strip():
            return {}
        try:
            value = orjson.loads(self.arguments)
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            message = f"the upstream's call of tool {self.name!r} has arguments that are no object"
            raise MalformedAnswer(message)
        return value


@dataclass(frozen=True, slots=True)
class AnswerParts:
    """A complete answer's parts, in the order they are written back."""

    id: str
    model: str
    reasoning: str
    text: str
    tool_calls: tuple[AnswerToolCall, ...]
    finish_reason: str | None
    thinking_blocks: tuple[dict[str, Any], ...] = ()
    """Anthropic's signed ``thinking`` / ``redacted_thinking`` blocks, when the source sent them."""


def answer_parts(result: LLMResponse) -> AnswerParts:
    """Read the first choice of ``result``'s OpenAI-shaped answer."""
    choices = result.raw.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    message = first.get("message") if isinstance(first, dict) else None
    message = message if isinstance(message, dict) else {}
    text = _text(message.get("content")) or _text(message.get("refusal"))
    calls = message.get("tool_calls")
    tool_calls = tuple(_tool_call(call) for call in calls) if isinstance(calls, list) else ()
    return AnswerParts(
        id=str(result.raw.get("id") or ""),
        model=result.model,
        reasoning=result.reasoning_content or "",
        text=text,
        tool_calls=tool_calls,
        finish_reason=result.finish_reason,
        thinking_blocks=signed_blocks(message.get("thinking_blocks")),
    )


def signed_blocks(blocks: object) -> tuple[dict[str, Any], ...]:
    """The well-formed signed thinking and redacted thinking blocks of ``blocks``."""
    if not isinstance(blocks, list):
        return ()
    return tuple(
        block
        for block in blocks
        if isinstance(block, dict)
        and (
            (block.get("type") == "thinking" and isinstance(block.get("signature"), str))
            or (block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str))
        )
    )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _tool_call(call: object) -> AnswerToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(function, dict):
        raise MalformedAnswer("the upstream's answer has a malformed tool call")
    arguments = function.get("arguments")
    return AnswerToolCall(
        id=str(call.get("id") or ""),
        name=str(function.get("name") or ""),
        arguments=arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode(),
    )


@dataclass(slots=True)
class Block:
    """One block of a streamed answer, with everything it has said so far."""

    index: int
    kind: BlockKind
    text: str = ""
    tool_id: str = ""
    tool_name: str = ""


@dataclass(frozen=True, slots=True)
class Opened:
    """A block begins (a tool block knows its id and name from its first fragment)."""

    block: Block


@dataclass(frozen=True, slots=True)
class Grew:
    """A block received more text (for a tool block: more of its arguments)."""

    block: Block
    text: str


@dataclass(frozen=True, slots=True)
class Signed:
    """A source's thinking block, whole and signed, arrived (Anthropic sends it last)."""

    block: Block
    """The reasoning block it signs (the open one), or a new ``redacted`` block."""
    signed: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Closed:
    """A block is complete."""

    block: Block


BlockEvent = Opened | Grew | Signed | Closed


@dataclass(slots=True)
class BlockReader:
    """Turns a stream's OpenAI chunks into block events; keeps the answer's facts."""

    id: str = ""
    model: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    blocks: list[Block] = field(default_factory=list)
    _open: Block | None = None
    _tools: dict[int, Block] = field(default_factory=dict)

    def read(self, chunk: ChatChunk) -> list[BlockEvent]:
        """The block events of one chunk."""
        raw = chunk.raw or {}
        self.id = self.id or str(raw.get("id") or "")
        self.model = self.model or chunk.model or ""
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        events: list[BlockEvent] = []
        if chunk.reasoning_content:
            self._grow("reasoning", chunk.reasoning_content, events)
        if chunk.content:
            self._grow("text", chunk.content, events)
        for fragment in _tool_fragments(raw):
            self._tool(fragment, events)
        for signed in signed_blocks(_delta(raw).get("thinking_blocks")):
            self._signed(signed, events)
        return events

    def close(self) -> list[BlockEvent]:
        """Close the block still open at the end of the stream."""
        events: list[BlockEvent] = []
        self._close(events)
        return events

    def _grow(self, kind: BlockKind, text: str, events: list[BlockEvent]) -> None:
        if self._open is None or self._open.kind != kind:
            self._start(Block(len(self.blocks), kind), events)
        assert self._open is not None
        self._open.text += text
        events.append(Grew(self._open, text))

    def _tool(self, fragment: dict[str, Any], events: list[BlockEvent]) -> None:
        position = fragment.get("index", 0)
        function = fragment.get("function") or {}
        block = self._tools.get(position)
        if block is None:
            block = Block(len(self.blocks), "tool")
            block.tool_id = str(fragment.get("id") or "")
            block.tool_name = str(function.get("name") or "")
            self._tools[position] = block
            self._start(block, events)
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            block.text += arguments
            events.append(Grew(block, arguments))

    def _signed(self, signed: dict[str, Any], events: list[BlockEvent]) -> None:
        """A signature for the open reasoning block, or a redacted block of its own."""
        open_reasoning = self._open is not None and self._open.kind == "reasoning"
        if signed["type"] == "thinking" and not open_reasoning:
            self._grow("reasoning", str(signed.get("thinking") or ""), events)
        elif signed["type"] == "redacted_thinking":
            self._start(Block(len(self.blocks), "redacted", str(signed["data"])), events)
        assert self._open is not None
        events.append(Signed(self._open, signed))

    def _start(self, block: Block, events: list[BlockEvent]) -> None:
        self._close(events)
        self.blocks.append(block)
        self._open = block
        events.append(Opened(block))

    def _close(self, events: list[BlockEvent]) -> None:
        if self._open is not None:
            events.append(Closed(self._open))
            self._open = None


def _delta(raw: dict[str, Any]) -> dict[str, Any]:
    choices = raw.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    delta = first.get("delta") if isinstance(first, dict) else None
    return delta if isinstance(delta, dict) else {}


def _tool_fragments(raw: dict[str, Any]) -> list[dict[str, Any]]:
    calls = _delta(raw).get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [call for call in calls if isinstance(call, dict)]
