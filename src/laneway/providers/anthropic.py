"""The Anthropic Messages wire format (``POST {base_url}/messages``).

Requests are translated by ``laneway.providers.anthropic_request``. Answers
come back in OpenAI's shape: text blocks are the content, thinking blocks the
reasoning, ``tool_use`` blocks tool calls (``finish_reason: tool_calls``), and
the forced ``json_answer`` tool's input the content of a JSON answer.
Anthropic counts cache reads and writes apart from ``input_tokens``;
laneway's prompt tokens are their sum, with the reads as ``cached_tokens`` and
the writes as ``cache_write_tokens``, each priced at its own rate. Thinking is
billed inside ``output_tokens`` and never reported apart: ``reasoning_tokens``
stays unknown. Thinking blocks, with their signatures, also come back whole as
the message's ``thinking_blocks`` (LiteLLM's name), which a caller hands back
in the history: Anthropic wants them before the tool calls of a thinking turn.

Streams are ``event:``/``data:`` pairs whose payload names its own ``type``,
so only the ``data:`` lines are read. A parser per stream numbers the tool
calls (Anthropic numbers all content blocks), keeps ``message_start``'s usage
for the final ``message_delta``, whose usage may carry output tokens only, and
turns ``json_answer``'s input fragments into content; ``message_stop`` ends
the stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible, RequestInvalid
from laneway.core.failures import FailureKind
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import NO_USAGE, ChatChunk, ChatRequest, EmbedRequest, Reasoning, Usage
from laneway.core.vectors import VectorEncoding
from laneway.providers.anthropic_request import JSON_TOOL, messages_body
from laneway.providers.base import (
    ChatResult,
    EmbedResult,
    as_context_length,
    classify_status,
    load_event,
    load_json,
    openai_chunk,
    openai_completion,
    token_count,
    tool_call,
    tool_call_delta,
    with_request_id,
)

API_VERSION = "2023-06-01"
CONTEXT_MARKER = "prompt is too long"
"""How Anthropic's 400 says the prompt is longer than the model's window."""

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}
_NOTHING = ChatChunk()
"""What events without content for the caller (``ping``, block boundaries) parse to."""


COUNTED_FIELDS = ("messages", "system", "tools", "tool_choice", "thinking", "output_config")
"""The fields of a Messages API body ``/messages/count_tokens`` takes (besides ``model``)."""


class AnthropicProvider:
    """Speaks ``/messages`` for one model; Anthropic has no embeddings API."""

    def __init__(
        self, base_url: str, model: str, api_key: str | None, max_tokens: int | None = None
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self._url = f"{base_url.rstrip('/')}/messages"
        self._headers = {"content-type": "application/json", "anthropic-version": API_VERSION}
        if api_key:
            self._headers["x-api-key"] = api_key

    def count_tokens_request(self, body: Mapping[str, Any]) -> HttpRequest:
        """``/messages/count_tokens`` for a Messages API ``body``, asking of this source's model."""
        payload = {name: body[name] for name in COUNTED_FIELDS if name in body}
        payload["model"] = self.model
        return HttpRequest(
            "POST", f"{self._url}/count_tokens", self._headers, orjson.dumps(payload)
        )

    def inexpressible(self, request: ChatRequest, *, stream: bool) -> Inexpressible | None:
        """What of ``request`` the Messages API cannot carry (see ``anthropic_request``)."""
        try:
            messages_body(request, self.model, self.max_tokens)
        except Inexpressible as refusal:
            return refusal
        return None

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the ``/messages`` body; ``max_tokens`` is the caller's or the source's."""
        body = messages_body(request, self.model, self.max_tokens)
        if stream:
            body["stream"] = True
        headers = with_request_id(self._headers, request.headers)
        return HttpRequest("POST", self._url, headers, orjson.dumps(body))

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse a ``message`` into text, reasoning and tool calls (or a JSON answer)."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        data = load_json(response.body, "chat answer")
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise AttemptFailure(FailureKind.MALFORMED, "chat answer has no content list")
        kinds = [b for b in blocks if isinstance(b, dict)]
        thinking = "".join(str(b.get("thinking", "")) for b in kinds if b.get("type") == "thinking")
        thoughts = [b for b in kinds if b.get("type") in ("thinking", "redacted_thinking")]
        texts = [str(b.get("text", "")) for b in kinds if b.get("type") == "text"]
        uses = [b for b in kinds if b.get("type") == "tool_use"]
        answers = [_json_text(b.get("input")) for b in uses if b.get("name") == JSON_TOOL]
        calls = [_call(b) for b in uses if b.get("name") != JSON_TOOL]
        finish = _finish(data.get("stop_reason"))
        result = ChatResult(
            content="".join(answers) if answers else "".join(texts),
            usage=anthropic_usage(data.get("usage")),
            model=str(data.get("model") or self.model),
            finish_reason="stop" if answers and finish == "tool_calls" else finish,
            reasoning_content=thinking or None,
            reasoning=Reasoning.PRESENT if thoughts else Reasoning.ABSENT,
            tool_calls=calls,
        )
        result.raw = openai_completion(result, data.get("id"), wall_now)
        if thoughts:
            result.raw["choices"][0]["message"]["thinking_blocks"] = thoughts
        return result

    def stream_parser(self) -> AnthropicEvents:
        """A parser for one stream (it numbers tool calls and keeps the opening usage)."""
        return AnthropicEvents(self.model)

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Refuse: Anthropic has no embeddings API (config validation rejects such lanes)."""
        raise RequestInvalid("model", "Anthropic has no embeddings API; use another source")

    def parse_embed(
        self, response: HttpResponse, wall_now: float, encoding: VectorEncoding | None = None
    ) -> EmbedResult:
        """Unreachable: no embeddings request is ever built."""
        raise AttemptFailure(FailureKind.MALFORMED, "Anthropic has no embeddings API")

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """Classify by the shared rules; ``prompt is too long`` is a context-length rejection."""
        return as_context_length(classify_status(status, headers, body, wall_now), CONTEXT_MARKER)


class AnthropicEvents:
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
        finish = _finish((event.get("delta") or {}).get("stop_reason"))
        if self.json_answer and finish == "tool_calls":
            finish = "stop"
        closing = event.get("usage")
        usage = None
        if isinstance(closing, dict):
            usage = anthropic_usage({**self.opening_usage, **closing})
        return self._chunk({}, finish_reason=finish, usage=usage)


def anthropic_usage(data: object) -> Usage:
    """Anthropic ``usage``: prompt = input + cache reads + cache writes; unknown parts stay None."""
    if not isinstance(data, dict):
        return NO_USAGE
    fresh = token_count(data.get("input_tokens"))
    output = token_count(data.get("output_tokens"))
    if fresh is None and output is None:
        return NO_USAGE
    read = token_count(data.get("cache_read_input_tokens"))
    written = token_count(data.get("cache_creation_input_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=None if prompt is None or output is None else prompt + output,
        cached_tokens=read if fresh is not None else None,
        cache_write_tokens=written if fresh is not None else None,
        source="provider",
    )


def _finish(reason: object) -> str | None:
    return _FINISH.get(reason, reason) if isinstance(reason, str) else None


def _json_text(value: object) -> str:
    return orjson.dumps(value if value is not None else {}).decode()


def _call(block: dict[str, Any]) -> dict[str, Any]:
    arguments = _json_text(block.get("input"))
    return tool_call(str(block.get("id", "")), str(block.get("name", "")), arguments)
