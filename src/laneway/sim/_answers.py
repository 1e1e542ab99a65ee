"""Build OpenAI-shaped answers as bytes; pure, so the app only has to send them.

Answer text is deterministic (`sim answer w2 w3 ...`, one word per stream chunk) so
tests can assert on it, and token counts follow from it: prompt tokens from the
prompt's characters, completion tokens from the words sent.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from dataclasses import dataclass
from email.utils import formatdate
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import orjson

from laneway.sim._request import (
    DEFAULT_MODEL,
    Request,
    assistant_turns,
    embedding_inputs,
    prefill_text,
    prompt_chars,
    requested_dimensions,
    requested_model,
    tokens_for_chars,
)
from laneway.sim._tools import (
    IMAGE_TOKENS,
    ToolCall,
    image_count,
    json_content,
    planned_tool_calls,
)

if TYPE_CHECKING:
    from laneway.sim._faults import Refusal
    from laneway.sim._spec import Behaviour

Headers = list[tuple[bytes, bytes]]

DEFAULT_DIMS = 8
"""Embedding length when neither the spec nor the request sets one."""

REASONING_WORDS = ("Considering", "the", "question", "carefully.")
"""Reasoning text of the `reasoning` token; one word per streamed reasoning delta."""

JSON_ANSWER = '{"answer": "sim answer"}'
"""Answer of the `json_after=N` token once the request carries N earlier answers."""
JSON_WRONG = '{"wrong": "sim answer"}'
"""Answer of `json_after=N` before that: valid JSON of the wrong shape (a re-ask's cue)."""

_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    408: ("timeout_error", "timeout"),
    409: ("conflict_error", "conflict"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "gateway_timeout"),
    529: ("overloaded_error", "overloaded"),
}


@dataclass(frozen=True, slots=True)
class Reply:
    """A complete non-streamed HTTP answer."""

    status: int
    body: bytes
    headers: Headers


@dataclass(frozen=True, slots=True)
class Completion:
    """The facts shared by the plain and the streamed form of one chat answer."""

    id: str
    created: int
    model: str
    prompt_tokens: int
    pieces: tuple[str, ...]
    """Content deltas; joined they are the whole answer."""
    reasoning_pieces: tuple[str, ...]
    with_usage: bool
    tool_calls: tuple[ToolCall, ...] = ()
    stopped: bool = False
    """Whether a stop sequence cut the answer short."""
    cached_tokens: int = 0
    """Prompt tokens read from the prompt cache (see `_cache`)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the prompt cache (Anthropic's marked prefixes only)."""
    choices: int = 1
    """How many alike answers were asked for (`n`, Gemini's `candidateCount`)."""

    @property
    def finish_reason(self) -> str:
        """`tool_calls` when the answer calls tools, else `stop`."""
        return "tool_calls" if self.tool_calls else "stop"

    @property
    def answer_tokens(self) -> int:
        """Completion tokens without reasoning: a token per piece, plus each call's size."""
        calls = sum(tokens_for_chars(len(c.name) + len(c.arguments)) for c in self.tool_calls)
        return len(self.pieces) + calls

    def usage(self) -> dict[str, Any]:
        """Token usage; reasoning tokens count as completion tokens, as OpenAI counts them."""
        reasoning_tokens = len(self.reasoning_pieces) * self.choices
        completion_tokens = self.answer_tokens * self.choices + reasoning_tokens
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        }
        if self.reasoning_pieces:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage


@lru_cache(maxsize=256)
def answer_pieces(count: int) -> tuple[str, ...]:
    """Return `count` stream deltas spelling `sim answer w2 w3 ...`."""
    return _as_deltas(("sim", "answer", *(f"w{index}" for index in range(2, count)))[:count])


def _as_deltas(words: tuple[str, ...]) -> tuple[str, ...]:
    """Space-prefix every word but the first, so the deltas join into the sentence."""
    return tuple(word if index == 0 else f" {word}" for index, word in enumerate(words))


_REASONING_PIECES = _as_deltas(REASONING_WORDS)


def plan_completion(
    behaviour: Behaviour, request: Request, number: int, created: int
) -> Completion:
    """Work out what chat answer number `number` says, before choosing its wire form."""
    calls = () if behaviour.empty or behaviour.json_after else planned_tool_calls(request, number)
    pieces = () if behaviour.empty or calls else _pieces(behaviour, request)
    kept = _before_stop(pieces, request.get("stop"))
    thinking = request.get("reasoning_effort") not in (None, "none", "minimal")
    images = image_count(request) * IMAGE_TOKENS
    return Completion(
        id=f"chatcmpl-sim-{number}",
        created=created,
        model=behaviour.model or requested_model(request),
        prompt_tokens=tokens_for_chars(prompt_chars(request)) + images,
        pieces=kept,
        reasoning_pieces=_REASONING_PIECES if behaviour.reasoning or thinking else (),
        with_usage=not behaviour.nousage,
        tool_calls=calls,
        stopped=kept != pieces,
        choices=_choices(request),
    )


def _choices(request: Request) -> int:
    """`n`, for answers the sim writes whole (its OpenAI stream script has one choice)."""
    if request.get("stream") is True:
        return 1
    count = request.get("n")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def _pieces(behaviour: Behaviour, request: Request) -> tuple[str, ...]:
    """The answer's deltas: the sentence, the JSON asked for, or `json_after`'s object.

    A request ending in an assistant prefill that begins the sentence gets the
    rest of it, as a model continues its own partial answer.
    """
    if behaviour.json_after is not None:
        valid = assistant_turns(request) >= behaviour.json_after
        return (JSON_ANSWER if valid else JSON_WRONG,)
    asked = json_content(request)
    if asked is not None:
        third = max(1, len(asked) // 3)
        return tuple(asked[i : i + third] for i in range(0, len(asked), third))
    return _continued(answer_pieces(behaviour.chunks), prefill_text(request))


def _before_stop(pieces: tuple[str, ...], stop: object) -> tuple[str, ...]:
    """The pieces before the first stop sequence (the last one cut where it starts)."""
    sequences = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    text = "".join(pieces)
    found = [text.find(s) for s in sequences if isinstance(s, str) and s and s in text]
    if not found:
        return pieces
    end, kept, used = min(found), [], 0
    for piece in pieces:
        if used + len(piece) > end:
            if end > used:
                kept.append(piece[: end - used])
            break
        kept.append(piece)
        used += len(piece)
    return tuple(kept)


def _continued(pieces: tuple[str, ...], prefill: str | None) -> tuple[str, ...]:
    """The deltas after `prefill`, when the answer begins with it; all of them otherwise."""
    if not prefill or not "".join(pieces).startswith(prefill):
        return pieces
    rest: list[str] = []
    at = 0
    for piece in pieces:
        end = at + len(piece)
        if end > len(prefill):
            rest.append(piece[max(len(prefill) - at, 0) :])
        at = end
    return tuple(rest)


def json_reply(payload: object, status: int = 200, headers: Headers | None = None) -> Reply:
    """Serialise `payload` into a JSON reply."""
    return Reply(
        status, orjson.dumps(payload), [(b"content-type", b"application/json")] + (headers or [])
    )


def chat_reply(completion: Completion) -> Reply:
    """The non-streamed `chat.completion` object."""
    content = "".join(completion.pieces) if not completion.tool_calls else None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if completion.reasoning_pieces:
        message["reasoning_content"] = "".join(completion.reasoning_pieces)
    if completion.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in completion.tool_calls
        ]
    choices = [
        {"index": index, "message": message, "finish_reason": completion.finish_reason}
        for index in range(completion.choices)
    ]
    payload: dict[str, Any] = {
        "id": completion.id,
        "object": "chat.completion",
        "created": completion.created,
        "model": completion.model,
        "choices": choices,
    }
    if completion.with_usage:
        payload["usage"] = completion.usage()
    return json_reply(payload)


@lru_cache(maxsize=4096)
def embedding_vector(text: str, dims: int) -> tuple[float, ...]:
    """A unit vector derived from a hash of `text`, the same on every run."""
    digest = hashlib.shake_256(text.encode()).digest(2 * dims)
    raw = struct.unpack(f"<{dims}h", digest)
    norm = math.sqrt(sum(value * value for value in raw)) or 1.0
    return tuple(value / norm for value in raw)


def embeddings_reply(behaviour: Behaviour, request: Request) -> Reply:
    """The embeddings list; `dims` beats the request's `dimensions`, like a deaf provider.

    `encoding_format: base64` answers little-endian float32s in base64, as OpenAI does.
    """
    dims = behaviour.dims or requested_dimensions(request) or DEFAULT_DIMS
    texts = embedding_inputs(request)
    packed = request.get("encoding_format") == "base64"
    data = [
        {
            "object": "embedding",
            "index": index,
            "embedding": (_base64 if packed else tuple)(embedding_vector(text, dims)),
        }
        for index, text in enumerate(texts)
    ]
    payload: dict[str, Any] = {
        "object": "list",
        "data": data,
        "model": behaviour.model or requested_model(request),
    }
    if not behaviour.nousage:
        prompt_tokens = tokens_for_chars(sum(len(text) for text in texts))
        payload["usage"] = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
    return json_reply(payload)


def _base64(vector: tuple[float, ...]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def models_reply(behaviour: Behaviour) -> Reply:
    """The model list: one model, named by the spec's `model` if it has one."""
    model = {"id": behaviour.model or DEFAULT_MODEL, "object": "model", "created": 0}
    return json_reply({"object": "list", "data": [{**model, "owned_by": "laneway-sim"}]})


def error_payload(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-shaped error body; `code` defaults to the usual one for `status`."""
    default_type = "invalid_request_error" if status < 500 else "server_error"
    error_type, default_code = _ERROR_KINDS.get(status, (default_type, None))
    error = {"message": message, "type": error_type, "param": None, "code": code or default_code}
    return {"error": error}


def _retry_headers(behaviour: Behaviour, refusal: Refusal, wall_now: float) -> Headers:
    headers: Headers = []
    if behaviour.retry_after is not None:
        headers.append((b"retry-after", behaviour.retry_after.encode()))
    elif behaviour.retry_after_date is not None:
        date = formatdate(wall_now + behaviour.retry_after_date, usegmt=True)
        headers.append((b"retry-after", date.encode()))
    elif refusal.retry_after is not None:
        headers.append((b"retry-after", str(refusal.retry_after).encode()))
    if behaviour.retry_after_ms is not None:
        headers.append((b"retry-after-ms", behaviour.retry_after_ms.encode()))
    return headers


def error_reply(behaviour: Behaviour, refusal: Refusal, wall_now: float) -> Reply:
    """The error answer for `refusal`, with the retry hints the spec asks for.

    One `Retry-After` at most: the spec's `retry_after` wins over `retry_after_date`,
    which wins over the value the rate limiter computed.
    """
    payload = error_payload(refusal.status, refusal.message, refusal.code)
    return json_reply(payload, refusal.status, _retry_headers(behaviour, refusal, wall_now))
