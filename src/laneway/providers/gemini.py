"""The Gemini native wire format (``generativelanguage.googleapis.com/v1beta``).

Chat goes to ``models/{model}:generateContent`` (streams to
``:streamGenerateContent?alt=sse``), embeddings to ``:batchEmbedContents``,
whose ``usageMetadata`` carries the token count that Google's
OpenAI-compatible surface drops. The key travels in ``x-goog-api-key``, never
in the URL, so a URL can be shown or logged. Requests are translated by
``laneway.providers.gemini_request``; ``functionCall`` parts come back as
OpenAI tool calls (ids made up where Gemini gives none, ``finish_reason:
tool_calls``), thought parts as reasoning, each of ``candidateCount``
candidates (OpenAI's ``n``) as a choice.

Gemini's JSON is proto3, which leaves out counts of zero: inside a present
``usageMetadata`` a missing count is 0, while a missing ``usageMetadata`` (or
one without ``promptTokenCount``) is unknown usage, never zero.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure, Inexpressible, RequestInvalid
from laneway.core.failures import FailureKind
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import NO_USAGE, ChatChunk, ChatRequest, EmbedRequest, Usage
from laneway.core.vectors import Vector, VectorEncoding
from laneway.providers.base import (
    ChatResult,
    EmbedResult,
    as_context_length,
    classify_status,
    load_event,
    load_json,
    openai_chunk,
    openai_completion,
    reasoning_of,
    text_inputs,
    token_count,
    tool_call,
    tool_call_delta,
    with_request_id,
)
from laneway.providers.gemini_request import generate_body

CONTEXT_MARKER = "exceeds the maximum number of tokens"
"""How Gemini's 400 says the prompt is longer than the model's window."""

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


@dataclass(frozen=True, slots=True)
class _Candidate:
    """What the first candidate of a ``GenerateContentResponse`` (or stream chunk) says."""

    content: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    """The ``functionCall`` parts, each with its ``thoughtSignature`` if any."""
    index: int = 0
    """Which of ``candidateCount`` answers this is (OpenAI's choice index)."""


class GeminiProvider:
    """Speaks ``generateContent`` and ``batchEmbedContents`` for one model."""

    def __init__(self, base_url: str, model: str, api_key: str | None) -> None:
        self.model = model.removeprefix("models/")
        self._root = f"{base_url.rstrip('/')}/models/{self.model}"
        self._headers = {"content-type": "application/json"}
        if api_key:
            self._headers["x-goog-api-key"] = api_key

    def inexpressible(self, request: ChatRequest, *, stream: bool) -> Inexpressible | None:
        """What of ``request`` Gemini cannot carry (see ``gemini_request``)."""
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
        data = load_json(response.body, "chat answer")
        usage = gemini_usage(data.get("usageMetadata"))
        model = str(data.get("modelVersion") or self.model)
        candidates = _candidates(data, strict=True)
        results = [_result(candidate, usage, model) for candidate in candidates]
        answer_id = data.get("responseId")
        result = results[0]
        result.raw = openai_completion(result, answer_id, wall_now)
        result.raw["choices"] = [
            {**openai_completion(r, answer_id, wall_now)["choices"][0], "index": c.index}
            for r, c in zip(results, candidates, strict=True)
        ]
        return result

    def stream_parser(self) -> GeminiEvents:
        """A parser for one stream (it numbers the tool calls across chunks)."""
        return GeminiEvents(self.model)

    def embed_request(self, request: EmbedRequest) -> HttpRequest:
        """Build ``batchEmbedContents``; ``outputDimensionality`` when the lane pins a length."""
        for key in request.params:
            if key != "user":
                raise RequestInvalid(key, "has no equivalent in Gemini's batchEmbedContents")
        pinned = {} if request.dimensions is None else {"outputDimensionality": request.dimensions}
        items = [
            {"model": f"models/{self.model}", "content": {"parts": [{"text": text}]}, **pinned}
            for text in text_inputs(request.inputs, "Gemini's batchEmbedContents")
        ]
        body = orjson.dumps({"requests": items})
        headers = with_request_id(self._headers, request.headers)
        return HttpRequest("POST", f"{self._root}:batchEmbedContents", headers, body)

    def parse_embed(
        self, response: HttpResponse, wall_now: float, encoding: VectorEncoding | None = None
    ) -> EmbedResult:
        """Parse ``embeddings[].values`` (in request order) and ``usageMetadata``.

        Gemini answers floats only, whatever ``encoding`` the caller wants: the
        engine converts them once.
        """
        if response.status >= 400:
            raise self.failure(response.status, response.headers, response.body, wall_now)
        data = load_json(response.body, "embeddings answer")
        items = data.get("embeddings")
        if not isinstance(items, list):
            raise AttemptFailure(FailureKind.MALFORMED, "embeddings answer has no embeddings list")
        try:
            vectors: list[Vector] = [list(item["values"]) for item in items]
        except (TypeError, KeyError) as exc:
            raise AttemptFailure(
                FailureKind.MALFORMED, f"embeddings answer is malformed: {exc}"
            ) from exc
        return EmbedResult(vectors, embed_usage(data.get("usageMetadata")), self.model)

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


class GeminiEvents:
    """One Gemini stream's chunks as OpenAI chunks.

    Gemini sends no ``[DONE]``: the stream ends when the body does, and the
    final chunk's ``finishReason`` tells the engine the answer is complete.
    Running counts on earlier chunks are left out of the OpenAI chunks.
    ``functionCall`` parts arrive whole, each one tool-call delta numbered
    across the stream.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls: dict[int, int] = {}
        """Tool calls sent so far, per candidate."""

    def parse_event(self, data: bytes) -> ChatChunk | None:
        """Parse one stream chunk; the one with ``finishReason`` carries the usage.

        Every candidate becomes a choice of the chunk; the first one's text
        is the chunk's content (what the engine follows).
        """
        event = load_event(data)
        if "error" in event:
            raise AttemptFailure(FailureKind.CUT, f"upstream sent an error event: {event['error']}")
        candidates = _candidates(event, strict=False)
        first = candidates[0]
        final = gemini_usage(event.get("usageMetadata")) if first.finish_reason else NO_USAGE
        usage = final if final.known else None
        choices = [self._choice(candidate) for candidate in candidates]
        model = event.get("modelVersion") or self.model
        raw = openai_chunk({}, usage=usage, answer_id=event.get("responseId"), model=model)
        raw["choices"] = choices
        finish = choices[0]["finish_reason"]
        return ChatChunk(first.content, first.reasoning, finish, usage, model, raw)

    def _choice(self, candidate: _Candidate) -> dict[str, Any]:
        delta: dict[str, Any] = {"content": candidate.content} if candidate.content else {}
        if candidate.reasoning:
            delta["reasoning_content"] = candidate.reasoning
        if candidate.calls:
            delta["tool_calls"] = [self._delta(candidate.index, call) for call in candidate.calls]
        called = self.calls.get(candidate.index, 0) > 0
        finish = _calls_finish(candidate.finish_reason, called)
        return {"index": candidate.index, "delta": delta, "finish_reason": finish}

    def _delta(self, index: int, call: dict[str, Any]) -> dict[str, Any]:
        whole = _tool_call(call, _call_id(call))
        function = whole["function"]
        number = self.calls.get(index, 0)
        delta = tool_call_delta(
            number, function["arguments"], call_id=whole["id"], name=function["name"]
        )["tool_calls"][0]
        if "extra_content" in whole:
            delta["extra_content"] = whole["extra_content"]
        self.calls[index] = number + 1
        return dict(delta)


def gemini_usage(meta: object) -> Usage:
    """``usageMetadata`` of a chat answer; thoughts count inside completion, as OpenAI counts."""
    if not isinstance(meta, dict) or token_count(meta.get("promptTokenCount")) is None:
        return NO_USAGE
    prompt: int = meta["promptTokenCount"]
    thoughts = token_count(meta.get("thoughtsTokenCount")) or 0
    completion = (token_count(meta.get("candidatesTokenCount")) or 0) + thoughts
    total = token_count(meta.get("totalTokenCount"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion if total is None else total,
        reasoning_tokens=thoughts,
        cached_tokens=token_count(meta.get("cachedContentTokenCount")) or 0,
        source="provider",
    )


def embed_usage(meta: object) -> Usage:
    """``usageMetadata`` of an embeddings answer: prompt tokens only."""
    if not isinstance(meta, dict) or token_count(meta.get("promptTokenCount")) is None:
        return NO_USAGE
    prompt: int = meta["promptTokenCount"]
    total = token_count(meta.get("totalTokenCount"))
    return Usage(prompt_tokens=prompt, total_tokens=total or prompt, source="provider")


def _result(candidate: _Candidate, usage: Usage, model: str) -> ChatResult:
    """One candidate as a complete answer (the usage is the whole response's)."""
    calls = [_tool_call(call, _call_id(call)) for call in candidate.calls]
    return ChatResult(
        content=candidate.content,
        usage=usage,
        model=model,
        finish_reason=_calls_finish(candidate.finish_reason, bool(calls)),
        reasoning_content=candidate.reasoning or None,
        reasoning=reasoning_of(bool(candidate.reasoning), usage),
        tool_calls=calls,
    )


def _candidates(data: dict[str, Any], *, strict: bool) -> list[_Candidate]:
    """Every candidate, in order; a blocked prompt is one ``content_filter`` candidate."""
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        blocked = (data.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            return [_Candidate(finish_reason="content_filter")]
        if strict:
            raise AttemptFailure(FailureKind.MALFORMED, "chat answer has no candidates")
        return [_Candidate()]
    return [
        _candidate(c if isinstance(c, dict) else {}, position)
        for position, c in enumerate(candidates)
    ]


def _candidate(first: dict[str, Any], position: int) -> _Candidate:
    parts = [p for p in (first.get("content") or {}).get("parts") or [] if isinstance(p, dict)]
    texts = [(p.get("thought") is True, p["text"]) for p in parts if isinstance(p.get("text"), str)]
    reason = first.get("finishReason")
    index = first.get("index")
    calls = [
        {**p["functionCall"], "thoughtSignature": p.get("thoughtSignature")}
        for p in parts
        if isinstance(p.get("functionCall"), dict)
    ]
    return _Candidate(
        content="".join(text for thought, text in texts if not thought),
        reasoning="".join(text for thought, text in texts if thought),
        finish_reason=_FINISH.get(reason, str(reason).lower()) if reason else None,
        calls=calls,
        index=index if isinstance(index, int) else position,
    )


def _call_id(call: dict[str, Any]) -> str:
    given = call.get("id")
    return given if isinstance(given, str) and given else f"call_{secrets.token_hex(12)}"


def _tool_call(call: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A ``functionCall`` as an OpenAI tool call; its thought signature rides along."""
    arguments = orjson.dumps(call.get("args") or {}).decode()
    out = tool_call(call_id, str(call.get("name", "")), arguments)
    signature = call.get("thoughtSignature")
    if isinstance(signature, str):
        out["extra_content"] = {"google": {"thought_signature": signature}}
    return out


def _calls_finish(reason: str | None, called: bool) -> str | None:
    """Gemini finishes a function call with ``STOP``; OpenAI says ``tool_calls``."""
    return "tool_calls" if called and reason == "stop" else reason


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
