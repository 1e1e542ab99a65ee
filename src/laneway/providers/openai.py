"""The OpenAI-compatible wire format (OpenAI, OpenRouter, vLLM, laneway sim...).

The bodies are ``laneway.wire.openai``'s; this adapter holds a source's URLs
and headers and classifies its error answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.passthrough import OPENAI_CHAT
from laneway.core.results import ChatResult, EmbedResult
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import ChatChunk, ChatRequest, EmbedRequest
from laneway.core.vectors import VectorEncoding
from laneway.providers.base import classify_status
from laneway.wire.openai import chat_answer, chat_request, embeddings, relay


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
        """The caller's parameters with this source's model (``wire.openai.chat_request``)."""
        body = chat_request.chat_request_body(request, self.model, stream=stream)
        return HttpRequest("POST", self._chat_url, self._sent(request.headers), body)

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse ``chat.completion``; error answers become classified failures."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        return chat_answer.read_completion(response.body, self.model)

    def stream_parser(self) -> OpenAIProvider:
        """This adapter: OpenAI chunks parse one by one, without state."""
        return self

    def relay_scan(self, wire: str) -> Callable[[bytes], int] | None:
        """For a caller of chat completions: ``wire.openai.relay.plain_prefix``."""
        return relay.plain_prefix if wire == OPENAI_CHAT else None

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one ``chat.completion.chunk``; ``[DONE]`` ends the stream."""
        return chat_answer.read_completion_chunk(data)

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Build ``/embeddings`` (``wire.openai.embeddings``)."""
        body = embeddings.embed_request_body(request, self.model)
        return HttpRequest("POST", self._embed_url, self._sent(request.headers), body)

    def _sent(self, forwarded: Mapping[str, str]) -> Mapping[str, str]:
        """The source's own headers after the caller's forwarded ones, which cannot replace them."""
        return {**forwarded, **self._headers} if forwarded else self._headers

    def parse_embed(
        self, response: HttpResponse, wall_now: float, encoding: VectorEncoding | None = None
    ) -> EmbedResult:
        """Parse the vectors in ``index`` order, kept in ``encoding`` when they came in it."""
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        return embeddings.read_embedding_list(response.body, encoding, self.model)

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """Classify an error answer (shared rules in ``providers.base``)."""
        return classify_status(status, headers, body, wall_now)
