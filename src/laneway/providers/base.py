"""What every provider adapter offers the engine, and shared answer parsing."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible, RequestInvalid
from laneway.core.failures import REJECTION_STATUSES, FailureKind
from laneway.core.retry_after import parse_retry_after
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import (
    NO_USAGE,
    ChatChunk,
    ChatRequest,
    EmbedInput,
    EmbedRequest,
    Reasoning,
    Usage,
)
from laneway.core.usage import openai_usage_dict
from laneway.core.vectors import Vector, VectorEncoding


@dataclass(slots=True)
class ChatResult:
    """A parsed, complete chat answer (before the engine adds call facts)."""

    content: str
    usage: Usage
    model: str
    finish_reason: str | None = None
    reasoning_content: str | None = None
    reasoning: Reasoning = Reasoning.UNKNOWN
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI-shaped tool calls (``id``, ``type``, ``function: {name, arguments}``)."""
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def has_tool_calls(self) -> bool:
        """Whether the answer calls tools."""
        return bool(self.tool_calls)

    @property
    def empty(self) -> bool:
        """An answer with neither content nor tool calls."""
        return not self.content and not self.has_tool_calls


@dataclass(slots=True)
class EmbedResult:
    """Parsed vectors, in input order: Python floats, or kept in the caller's encoding."""

    vectors: list[Vector]
    usage: Usage
    model: str


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


def load_json(body: bytes, what: str) -> dict[str, Any]:
    """Parse an answer body that must be a JSON object."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise AttemptFailure(FailureKind.MALFORMED, f"{what} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise AttemptFailure(FailureKind.MALFORMED, f"{what} is not a JSON object")
    return data


def load_event(data: bytes) -> dict[str, Any]:
    """Parse a stream event that must be a JSON object; ``ValueError`` marks it malformed."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"malformed event: {exc}") from exc
    if not isinstance(event, dict):
        raise ValueError("malformed event: not an object")
    return event


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
        cache_write_tokens=_count(prompt_details.get("cache_write_tokens")),
        source="provider",
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def token_count(value: object) -> int | None:
    """A token count from a parsed answer: an int, else ``None`` (never a guessed 0)."""
    return _count(value)


def reasoning_of(carried_text: bool, usage: Usage) -> Reasoning:
    """PRESENT with reasoning text or tokens; ABSENT only on a reported zero."""
    if carried_text or (usage.reasoning_tokens or 0) > 0:
        return Reasoning.PRESENT
    if usage.reasoning_tokens == 0:
        return Reasoning.ABSENT
    return Reasoning.UNKNOWN


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


def text_inputs(inputs: Sequence[EmbedInput], api: str) -> list[str]:
    """Embeddings inputs for a wire format that takes text only: token arrays are refused.

    A token array is the tokens of one model's tokenizer; another model would
    embed different text, so it is never decoded or passed on as numbers.
    """
    for index, item in enumerate(inputs):
        if not isinstance(item, str):
            message = f"is a token array; {api} takes text only: send the text"
            raise RequestInvalid(f"input[{index}]", message)
    return [item for item in inputs if isinstance(item, str)]


def openai_completion(result: ChatResult, answer_id: str | None, created: float) -> dict[str, Any]:
    """A native answer as OpenAI's ``chat.completion``: what the gateway serves."""
    content = result.content or (None if result.tool_calls else "")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if result.reasoning_content:
        message["reasoning_content"] = result.reasoning_content
    if result.tool_calls:
        message["tool_calls"] = result.tool_calls
    choice = {"index": 0, "message": message, "finish_reason": result.finish_reason}
    out: dict[str, Any] = {
        "id": answer_id or "",
        "object": "chat.completion",
        "created": int(created),
        "model": result.model,
        "choices": [choice],
    }
    usage = openai_usage_dict(result.usage)
    if usage is not None:
        out["usage"] = usage
    return out


def openai_chunk(
    delta: dict[str, Any],
    *,
    finish_reason: str | None = None,
    usage: Usage | None = None,
    answer_id: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """A native stream event as OpenAI's ``chat.completion.chunk`` (id/model when known)."""
    out: dict[str, Any] = {"id": answer_id} if answer_id else {}
    out["object"] = "chat.completion.chunk"
    if model:
        out["model"] = model
    out["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    rendered = None if usage is None else openai_usage_dict(usage)
    if rendered is not None:
        out["usage"] = rendered
    return out


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One OpenAI tool call of a complete answer."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_call_delta(
    index: int, fragment: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """A streamed tool-call delta: the first names the call, the rest add argument text."""
    function: dict[str, Any] = {"arguments": fragment}
    if name is not None:
        function = {"name": name, **function}
    delta: dict[str, Any] = {"index": index}
    if call_id is not None:
        delta.update(id=call_id, type="function")
    delta["function"] = function
    return {"tool_calls": [delta]}
