"""The OpenAI-compatible wire format (OpenAI, OpenRouter, vLLM, laneway sim...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.failures import FailureKind
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import ChatChunk, ChatRequest, EmbedRequest
from laneway.core.vectors import VectorEncoding
from laneway.providers.base import (
    ChatResult,
    EmbedResult,
    classify_status,
    load_event,
    load_json,
    openai_usage,
    reasoning_of,
)
from laneway.providers.openai_embed import answer_vectors
from laneway.providers.openai_parts import NAMESPACES

_DONE = b"[DONE]"


class OpenAIProvider:
    """Speaks ``/chat/completions`` and ``/embeddings`` under ``base_url``."""

    def __init__(self, base_url: str, model: str, api_key: str | None) -> None:
        self.model = model
        root = base_url.rstrip("/")
        self._chat_url = f"{root}/chat/completions"
        self._embed_url = f"{root}/embeddings"
        self._headers = {"content-type": "application/json"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"

    def inexpressible(self, request: ChatRequest, *, stream: bool) -> Inexpressible | None:
        """Nothing: the request is in this wire format already."""
        return None

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the body: caller parameters, then the source's model and messages.

        Fields namespaced for native providers (``anthropic``, ``gemini``) stay
        behind; every other unknown field passes through.
        """
        params = request.params
        if not NAMESPACES.isdisjoint(params):
            params = {k: v for k, v in params.items() if k not in NAMESPACES}
        body: dict[str, Any] = {**params, "model": self.model, "messages": request.messages}
        if stream:
            body["stream"] = True
            options = body.get("stream_options") or {}  # a caller's null is no options
            body["stream_options"] = {**options, "include_usage": True}
        else:
            body.pop("stream", None)
            body.pop("stream_options", None)
        return HttpRequest("POST", self._chat_url, self._sent(request.headers), orjson.dumps(body))

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse ``chat.completion``; error answers become classified failures."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        data = load_json(response.body, "chat answer")
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
            model=str(data.get("model") or self.model),
            finish_reason=choices[0].get("finish_reason"),
            reasoning_content=reasoning_text if isinstance(reasoning_text, str) else None,
            reasoning=reasoning_of(bool(reasoning_text), usage),
            tool_calls=calls if isinstance(calls, list) else [],
            raw=data,
        )

    def stream_parser(self) -> OpenAIProvider:
        """This adapter: OpenAI chunks parse one by one, without state."""
        return self

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one ``chat.completion.chunk``; ``[DONE]`` ends the stream."""
        if data.strip() == _DONE:
            return None
        event = load_event(data)
        if "error" in event:
            raise AttemptFailure(FailureKind.CUT, f"upstream sent an error event: {event['error']}")
        return _chunk(event)

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Build ``/embeddings``; ``dimensions`` is sent when the lane pins it.

        Token arrays go as they came: OpenAI-compatible embeddings APIs take them.
        A caller who wants base64 gets the upstream's base64 (a quarter of the
        bytes, relayed as sent; ``openai_embed``).
        """
        body: dict[str, Any] = {**request.params, "model": self.model, "input": request.inputs}
        if request.dimensions is not None:
            body["dimensions"] = request.dimensions
        if request.encoding == "base64":
            body["encoding_format"] = "base64"
        return HttpRequest("POST", self._embed_url, self._sent(request.headers), orjson.dumps(body))

    def _sent(self, forwarded: Mapping[str, str]) -> Mapping[str, str]:
        """The source's own headers after the caller's forwarded ones, which cannot replace them."""
        return {**forwarded, **self._headers} if forwarded else self._headers

    def parse_embed(
        self, response: HttpResponse, wall_now: float, encoding: VectorEncoding | None = None
    ) -> EmbedResult:
        """Parse the vectors in ``index`` order, kept in ``encoding`` when they came in it."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        data, vectors = answer_vectors(response.body, encoding)
        usage = openai_usage(data.get("usage"))
        return EmbedResult(vectors, usage, str(data.get("model") or self.model))

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """Classify an error answer (shared rules in ``providers.base``)."""
        return classify_status(status, headers, body, wall_now)


def _chunk(event: dict[str, Any]) -> ChatChunk:
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
    )
