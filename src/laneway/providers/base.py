"""What every provider adapter offers the engine, and what adapters share about HTTP answers.

The shapes of requests and answers are ``laneway.wire``'s; an adapter adds a
source's URLs, headers and key, and classifies error answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible
from laneway.core.failures import REJECTION_STATUSES, FailureKind
from laneway.core.results import ChatResult, EmbedResult
from laneway.core.retry_after import parse_retry_after
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import ChatChunk, ChatRequest, EmbedRequest
from laneway.core.vectors import VectorEncoding


class EventParser(Protocol):
    """Reads one stream's events; it may keep state between them (open blocks, tool indexes)."""

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one SSE ``data:`` payload; ``None`` marks the end of the stream.

        Raises ``ValueError`` for an event that cannot be parsed.
        """
        ...


class Provider(Protocol):
    """A wire-format adapter bound to one source (URL, model, key)."""

    model: str

    def inexpressible(self, request: ChatRequest, *, stream: bool) -> Inexpressible | None:
        """What of ``request`` this wire format cannot carry, without building it."""
        ...

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the upstream chat request; ``Inexpressible`` when it cannot be carried."""
        ...

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse a complete chat answer, or raise a classified ``AttemptFailure``."""
        ...

    def stream_parser(self) -> EventParser:
        """A parser for one streamed answer."""
        ...

    def relay_scan(self, wire: str) -> Callable[[bytes], int] | None:
        """For a caller speaking ``wire``: how much of each read of this stream goes on unread.

        The scan takes a block of whole lines (one network read) and returns
        how many leading bytes are whole events that hold nothing the gateway
        must read now, so they can be sent as they came (``laneway.engine.relay``).
        ``None``: every event is parsed and written in the caller's format. A
        source that offers a scan parses its events without state, so a
        relayed block can be read later.
        """
        ...

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Build the upstream embeddings request."""
        ...

    def parse_embed(
        self, response: HttpResponse, wall_now: float, encoding: VectorEncoding | None = None
    ) -> EmbedResult:
        """Parse an embeddings answer, or raise a classified ``AttemptFailure``.

        Vectors that came in ``encoding`` may stay encoded (``EncodedVector``);
        the engine converts the others.
        """
        ...

    def failure(
        self, status: int, headers: Mapping[str, str], body: bytes, wall_now: float
    ) -> AttemptFailure:
        """Classify an upstream error answer."""
        ...


def classify_status(
    status: int, headers: Mapping[str, str], body: bytes, wall_now: float
) -> AttemptFailure:
    """Turn an error answer into an ``AttemptFailure`` the retry policy understands.

    400/401/403/404/413/422 are rejections (never retried); a
    ``context_length_exceeded`` code is its own kind, so the engine can move
    the request to a source with a larger window.
    """
    detail = _error_detail(body)
    message = f"upstream answered {status}: {detail.get('message') or body[:200]!r}"
    code = str(detail.get("code") or "")
    if status in REJECTION_STATUSES:
        kind = FailureKind.CONTEXT_LENGTH if "context_length" in code else FailureKind.REJECTED
        return AttemptFailure(kind, message, status=status, body={"error": detail})
    return AttemptFailure(
        FailureKind.STATUS,
        message,
        status=status,
        retry_after=parse_retry_after(headers, wall_now),
        body={"error": detail},
    )


def _error_detail(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return error
    if isinstance(error, str):
        return {"message": error}
    return {}


def as_context_length(failure: AttemptFailure, marker: str) -> AttemptFailure:
    """Re-kind a rejection whose message says the prompt is too long.

    Native APIs say so in prose, not with OpenAI's ``context_length_exceeded``
    code; the kind is what lets the engine move to a source with a larger window.
    """
    if failure.kind == FailureKind.REJECTED and marker in failure.message.lower():
        return dataclasses.replace(failure, kind=FailureKind.CONTEXT_LENGTH)
    return failure


def with_request_id(own: Mapping[str, str], forwarded: Mapping[str, str]) -> Mapping[str, str]:
    """A native API's headers plus the caller's ``x-request-id`` (its only forwarded header).

    The other forwarded headers (``OpenAI-Organization``...) belong to OpenAI's API.
    """
    request_id = forwarded.get("x-request-id")
    return own if request_id is None else {**own, "x-request-id": request_id}
