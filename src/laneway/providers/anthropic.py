"""The Anthropic Messages wire format (``POST {base_url}/messages``).

System messages go to the top-level ``system``; ``max_tokens``, which
Anthropic requires, is the caller's or else the source's default. Anthropic
counts cache reads and writes apart from ``input_tokens``; laneway's prompt
tokens are their sum, with the reads as ``cached_tokens``, so a cache hit
lowers cost without hiding tokens. Thinking is billed inside
``output_tokens`` and never reported apart: ``reasoning_tokens`` stays unknown.

Streams are ``event:``/``data:`` pairs whose payload names its own ``type``,
so only the ``data:`` lines are read. The final ``message_delta`` carries the
stop reason and cumulative usage; ``message_stop`` ends the stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, RequestInvalid
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import NO_USAGE, ChatChunk, ChatRequest, EmbedRequest, Reasoning, Usage
from laneway.providers.base import (
    ChatResult,
    EmbedResult,
    as_context_length,
    classify_status,
    load_event,
    load_json,
    native_params,
    openai_chunk,
    openai_completion,
    split_messages,
    token_count,
)

WIRE = "anthropic"
API_VERSION = "2023-06-01"
CONTEXT_MARKER = "prompt is too long"
"""How Anthropic's 400 says the prompt is longer than the model's window."""

_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "stop": "stop_sequences",
}
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_NOTHING = ChatChunk()
"""What events without content for the caller (``ping``, block boundaries) parse to."""


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

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the body: ``system`` apart, turns as ``messages``, a ``max_tokens`` always."""
        system, turns = split_messages(request.messages)
        params = native_params(request.params, _PARAMS, WIRE)
        params.setdefault("max_tokens", self.max_tokens)
        if params["max_tokens"] is None:
            raise RequestInvalid("max_tokens", "Anthropic requires it: pass it or set the source's")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": t.role, "content": t.text} for t in turns],
            **params,
        }
        if system:
            body["system"] = [{"type": "text", "text": text} for text in system]
        if stream:
            body["stream"] = True
        return HttpRequest("POST", self._url, self._headers, orjson.dumps(body))

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse a ``message``: text blocks are the content, thinking blocks the reasoning."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        data = load_json(response.body, "chat answer")
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise AttemptFailure("malformed", "chat answer has no content list")
        kinds = [b for b in blocks if isinstance(b, dict)]
        thinking = "".join(str(b.get("thinking", "")) for b in kinds if b.get("type") == "thinking")
        thought = any(b.get("type") in ("thinking", "redacted_thinking") for b in kinds)
        result = ChatResult(
            content="".join(str(b.get("text", "")) for b in kinds if b.get("type") == "text"),
            usage=anthropic_usage(data.get("usage")),
            model=str(data.get("model") or self.model),
            finish_reason=_finish(data.get("stop_reason")),
            reasoning_content=thinking or None,
            reasoning=Reasoning.PRESENT if thought else Reasoning.ABSENT,
            has_tool_calls=any(b.get("type") == "tool_use" for b in kinds),
        )
        result.raw = openai_completion(result, data.get("id"), wall_now)
        return result

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one event payload; ``message_stop`` ends the stream."""
        event = load_event(data)
        kind = event.get("type")
        if kind == "message_stop":
            return None
        if kind == "error":
            raise AttemptFailure("cut", f"upstream sent an error event: {event.get('error')}")
        if kind == "message_start":
            return self._started(event.get("message") or {})
        if kind == "content_block_start":
            return _block_text(event.get("content_block") or {})
        if kind == "content_block_delta":
            return _block_text(event.get("delta") or {})
        if kind == "message_delta":
            return _finished(event)
        return _NOTHING

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Refuse: Anthropic has no embeddings API (config validation rejects such lanes)."""
        raise RequestInvalid("model", "Anthropic has no embeddings API; use another source")

    def parse_embed(self, response: HttpResponse, wall_now: float) -> EmbedResult:
        """Unreachable: no embeddings request is ever built."""
        raise AttemptFailure("malformed", "Anthropic has no embeddings API")

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """Classify by the shared rules; ``prompt is too long`` is a context-length rejection."""
        return as_context_length(classify_status(status, headers, body, wall_now), CONTEXT_MARKER)

    def _started(self, message: dict[str, Any]) -> ChatChunk:
        model = message.get("model") or self.model
        delta = {"role": "assistant", "content": ""}
        raw = openai_chunk(delta, answer_id=message.get("id"), model=model)
        return ChatChunk(model=model, raw=raw)


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
        source="provider",
    )


def _finish(reason: object) -> str | None:
    return _FINISH.get(reason, reason) if isinstance(reason, str) else None


def _block_text(block: dict[str, Any]) -> ChatChunk:
    """A text or thinking block's start, or a delta of one; other kinds carry nothing."""
    kind = block.get("type")
    if kind in ("text", "text_delta") and block.get("text"):
        text = str(block["text"])
        return ChatChunk(content=text, raw=openai_chunk({"content": text}))
    if kind in ("thinking", "thinking_delta") and block.get("thinking"):
        text = str(block["thinking"])
        return ChatChunk(reasoning_content=text, raw=openai_chunk({"reasoning_content": text}))
    return _NOTHING


def _finished(event: dict[str, Any]) -> ChatChunk:
    """``message_delta``: the stop reason and the cumulative usage of the whole answer."""
    finish = _finish((event.get("delta") or {}).get("stop_reason"))
    usage = anthropic_usage(event["usage"]) if event.get("usage") else None
    raw = openai_chunk({}, finish_reason=finish, usage=usage)
    return ChatChunk(finish_reason=finish, usage=usage, raw=raw)
