"""What every provider adapter offers the engine, and shared answer parsing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from laneway.core.errors import AttemptFailure
from laneway.core.retry_after import parse_retry_after
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import (
    NO_USAGE,
    ChatChunk,
    ChatRequest,
    EmbedRequest,
    Reasoning,
    Usage,
)

REJECTION_STATUSES = frozenset({400, 401, 403, 404, 413, 422})


@dataclass(slots=True)
class ChatResult:
    """A parsed, complete chat answer (before the engine adds call facts)."""

    content: str
    usage: Usage
    model: str
    finish_reason: str | None = None
    reasoning_content: str | None = None
    reasoning: Reasoning = Reasoning.UNKNOWN
    has_tool_calls: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """An answer with neither content nor tool calls."""
        return not self.content and not self.has_tool_calls


@dataclass(slots=True)
class EmbedResult:
    """Parsed vectors, in input order."""

    vectors: list[list[float]]
    usage: Usage
    model: str


class Provider(Protocol):
    """A wire-format adapter bound to one source (URL, model, key)."""

    model: str

    def chat_request(self, request: ChatRequest, *, stream: bool) -> HttpRequest:
        """Build the upstream chat request."""
        ...

    def parse_chat(self, response: HttpResponse, wall_now: float) -> ChatResult:
        """Parse a complete chat answer, or raise a classified ``AttemptFailure``."""
        ...

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one SSE ``data:`` payload; ``None`` marks the end of the stream.

        Raises ``ValueError`` for an event that cannot be parsed.
        """
        ...

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Build the upstream embeddings request."""
        ...

    def parse_embed(self, response: HttpResponse, wall_now: float) -> EmbedResult:
        """Parse an embeddings answer, or raise a classified ``AttemptFailure``."""
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
        kind = "context_length" if "context_length" in code else "rejected"
        return AttemptFailure(kind, message, status=status, body={"error": detail})
    return AttemptFailure(
        "status",
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


def load_json(body: bytes, what: str) -> dict[str, Any]:
    """Parse an answer body that must be a JSON object."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise AttemptFailure("malformed", f"{what} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AttemptFailure("malformed", f"{what} is not a JSON object")
    return data


def openai_usage(data: object) -> Usage:
    """Read an OpenAI ``usage`` object; a missing one is unknown, not zero."""
    if not isinstance(data, dict):
        return NO_USAGE
    details = data.get("completion_tokens_details") or {}
    prompt_details = data.get("prompt_tokens_details") or {}
    return Usage(
        prompt_tokens=_count(data.get("prompt_tokens")),
        completion_tokens=_count(data.get("completion_tokens")),
        total_tokens=_count(data.get("total_tokens")),
        reasoning_tokens=_count(details.get("reasoning_tokens")),
        cached_tokens=_count(prompt_details.get("cached_tokens")),
        source="provider",
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
