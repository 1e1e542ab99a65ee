"""What every provider adapter offers the engine, and shared answer parsing."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from laneway.core.errors import AttemptFailure, RequestInvalid
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


def load_event(data: bytes) -> dict[str, Any]:
    """Parse a stream event that must be a JSON object; ``ValueError`` marks it malformed."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"malformed event: {exc}") from None
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
    if failure.kind == "rejected" and marker in failure.message.lower():
        return dataclasses.replace(failure, kind="context_length")
    return failure


IGNORED_PARAMS = frozenset({"stream", "stream_options", "user"})
"""OpenAI parameters a native adapter may drop: transport details, or an end-user tag."""


def native_params(params: Mapping[str, Any], names: Mapping[str, str], wire: str) -> dict[str, Any]:
    """Rename OpenAI parameters to a native API's; refuse those without an equivalent.

    Dropping ``tools`` or ``response_format`` silently would return an answer
    the caller did not ask for, so an unmapped parameter is ``RequestInvalid``.
    """
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in IGNORED_PARAMS:
            continue
        native = names.get(key)
        if native is None:
            raise RequestInvalid(key, f"has no equivalent in the {wire} wire format")
        out[native] = [value] if key == "stop" and isinstance(value, str) else value
    return out


@dataclass(frozen=True, slots=True)
class Turn:
    """One non-system message as text, its role ``user`` or ``assistant``."""

    role: str
    text: str


def split_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[Turn]]:
    """System texts and conversation turns of OpenAI-shaped messages.

    Native APIs put system prompts apart from the turns. Roles and content
    parts without a native equivalent (tools, images) are ``RequestInvalid``
    rather than dropped, so no answer is given to a question never sent.
    """
    system: list[str] = []
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if message.get("tool_calls"):
            raise RequestInvalid(f"{where}.tool_calls", "tool calls are not supported here")
        if role in ("system", "developer"):
            system.append(message_text(message.get("content"), where))
        elif role in ("user", "assistant"):
            turns.append(Turn(str(role), message_text(message.get("content"), where)))
        else:
            raise RequestInvalid(f"{where}.role", f"role {role!r} is not supported here")
    return system, turns


def message_text(content: object, where: str) -> str:
    """The text of a message's ``content``: a string, or a list of text parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise RequestInvalid(f"{where}.content", "must be a string or a list of text parts")
    texts: list[str] = []
    for index, part in enumerate(content):
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str) or part.get("type", "text") != "text":
            raise RequestInvalid(f"{where}.content[{index}]", "only text parts are supported here")
        texts.append(text)
    return "".join(texts)


def openai_usage_dict(usage: Usage) -> dict[str, Any] | None:
    """``usage`` as OpenAI's object for ``raw`` answers; ``None`` when unknown."""
    if not usage.known:
        return None
    out: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    if usage.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    return out


def openai_completion(result: ChatResult, answer_id: str | None, created: float) -> dict[str, Any]:
    """A native answer as OpenAI's ``chat.completion``: what the gateway serves."""
    message: dict[str, Any] = {"role": "assistant", "content": result.content}
    if result.reasoning_content:
        message["reasoning_content"] = result.reasoning_content
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
