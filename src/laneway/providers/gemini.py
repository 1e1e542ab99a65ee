"""The Gemini native wire format (``generativelanguage.googleapis.com/v1beta``).

Chat goes to ``models/{model}:generateContent`` (streams to
``:streamGenerateContent?alt=sse``), embeddings to ``:batchEmbedContents``,
whose ``usageMetadata`` carries the token count that Google's
OpenAI-compatible surface drops. The key travels in ``x-goog-api-key``, never
in the URL, so a URL can be shown or logged. Bodies are written by
``laneway.wire.gemini.request_writer`` and read by ``wire.gemini.answer``;
this adapter holds a source's URLs, headers and key, and classifies its error
answers (reading pushback from ``google.rpc.RetryInfo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.failures import FailureKind
from laneway.core.results import ChatResult, EmbedResult
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import ChatRequest, EmbedRequest
from laneway.core.vectors import VectorEncoding
from laneway.providers.base import as_context_length, classify_status, with_request_id
from laneway.wire.gemini.answer import GenerateEventReader, read_embeddings, read_generate
from laneway.wire.gemini.request_writer import embed_contents_body, generate_body

CONTEXT_MARKER = "exceeds the maximum number of tokens"
"""How Gemini's 400 says the prompt is longer than the model's window."""
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


class GeminiProvider:
    """Speaks ``generateContent`` and ``batchEmbedContents`` for one model."""

    def __init__(self, base_url: str, model: str, api_key: str | None) -> None:
        self.model = model.removeprefix("models/")
        self._root = f"{base_url.rstrip('/')}/models/{self.model}"
        self._headers = {"content-type": "application/json"}
        if api_key:
            self._headers["x-goog-api-key"] = api_key

    def inexpressible(self, request: ChatRequest, *, stream: bool) -> Inexpressible | None:
        """What of ``request`` Gemini cannot carry (see ``request_writer``)."""
        try:
            generate_body(request)
        except Inexpressible as refusal:
            return refusal
        return None

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the ``generateContent`` (or SSE ``streamGenerateContent``) request."""
        body = generate_body(request)
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        headers = with_request_id(self._headers, request.headers)
        return HttpRequest("POST", f"{self._root}:{method}", headers, orjson.dumps(body))

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse a ``GenerateContentResponse``; a blocked prompt is a ``content_filter`` answer."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        return read_generate(response.body, self.model, wall_now)

    def stream_parser(self) -> GenerateEventReader:
        """A parser for one stream (it numbers the tool calls across chunks)."""
        return GenerateEventReader(self.model)

    def relay_scan(self, wire: str) -> None:
        """None: this source's events are parsed one by one and written for the caller."""
        return

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Build ``batchEmbedContents``; ``outputDimensionality`` when the lane pins a length."""
        body = embed_contents_body(request, self.model)
        headers = with_request_id(self._headers, request.headers)
        return HttpRequest("POST", f"{self._root}:batchEmbedContents", headers, body)

    def parse_embed(
        self, response: HttpResponse, wall_now: float, encoding: VectorEncoding | None = None
    ) -> EmbedResult:
        """Parse ``embeddings[].values`` (floats, whatever ``encoding``) and ``usageMetadata``."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        return read_embeddings(response.body, self.model)

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """Classify by the shared rules; read pushback from ``RetryInfo`` when no header has it."""
        failure = classify_status(status, headers, body, wall_now)
        if failure.kind == FailureKind.STATUS and failure.retry_after is None:
            delay = _retry_delay(failure.body or {})
            if delay is not None:
                failure = replace(failure, retry_after=delay)
        return as_context_length(failure, CONTEXT_MARKER)


def _retry_delay(body: dict[str, Any]) -> float | None:
    """The ``retryDelay`` of a ``google.rpc.RetryInfo`` detail (``"24s"``), if any."""
    details = (body.get("error") or {}).get("details")
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            text = str(detail.get("retryDelay", ""))
            try:
                return max(0.0, float(text.removesuffix("s")))
            except ValueError:
                return None
    return None
