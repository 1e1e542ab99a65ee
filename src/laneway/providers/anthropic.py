"""The Anthropic Messages wire format (``POST {base_url}/messages``).

Requests are written by ``laneway.wire.anthropic.request_writer``, answers
and stream events read by ``wire.anthropic.answer`` and ``events`` (into
OpenAI's shape, laneway's neutral answer); this adapter holds a source's
URL, headers and key, and classifies its error answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible, RequestInvalid
from laneway.core.failures import FailureKind
from laneway.core.results import ChatResult, EmbedResult
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import ChatRequest, EmbedRequest
from laneway.core.vectors import VectorEncoding
from laneway.providers.base import as_context_length, classify_status, with_request_id
from laneway.wire.anthropic.answer import read_message
from laneway.wire.anthropic.events import MessagesEventReader
from laneway.wire.anthropic.relay import relayed_messages_body
from laneway.wire.anthropic.request_writer import count_tokens_body, messages_body

API_VERSION = "2023-06-01"
CONTEXT_MARKER = "prompt is too long"
"""How Anthropic's 400 says the prompt is longer than the model's window."""


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
        payload = count_tokens_body(body, self.model)
        return HttpRequest("POST", f"{self._url}/count_tokens", self._headers, payload)

    def inexpressible(self, request: ChatRequest, *, stream: bool) -> Inexpressible | None:
        """What of ``request`` the Messages API cannot carry (see ``request_writer``)."""
        try:
            messages_body(request, self.model, self.max_tokens)
        except Inexpressible as refusal:
            return refusal
        return None

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the ``/messages`` body; ``max_tokens`` is the caller's or the source's.

        An Anthropic caller's body goes as it was sent, only its model changed
        (``wire.anthropic.relay``), when nothing else must change, streamed or not.
        """
        headers = with_request_id(self._headers, request.headers)
        relayed = relayed_messages_body(request, self.model, stream=stream)
        if relayed is not None:
            return HttpRequest("POST", self._url, headers, relayed)
        body = messages_body(request, self.model, self.max_tokens)
        if stream:
            body["stream"] = True
        return HttpRequest("POST", self._url, headers, orjson.dumps(body))

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse a ``message`` into text, reasoning and tool calls (or a JSON answer)."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        return read_message(response.body, self.model, wall_now)

    def stream_parser(self) -> MessagesEventReader:
        """A parser for one stream (it numbers tool calls and keeps the opening usage)."""
        return MessagesEventReader(self.model)

    def relay_scan(self, wire: str) -> None:
        """None: this source's events are parsed one by one and written for the caller."""
        return

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
