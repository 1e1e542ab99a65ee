"""Gemini's ``GenerateContentResponse`` and stream chunks, read into OpenAI's shape.

``functionCall`` parts come back as OpenAI tool calls (ids made up where
Gemini gives none, ``finish_reason: tool_calls``), thought parts as
reasoning, each of ``candidateCount`` candidates (OpenAI's ``n``) as a choice.

Gemini's JSON is proto3, which leaves out counts of zero: inside a present
``usageMetadata`` a missing count is 0, while a missing ``usageMetadata`` (or
one without ``promptTokenCount``) is unknown usage, never zero.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import orjson

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.results import ChatResult, EmbedResult
from laneway.core.types import NO_USAGE, ChatChunk, Usage
from laneway.core.vectors import Vector
from laneway.wire.decoding import load_event, load_json, reasoning_of, token_count
from laneway.wire.openai.chat_answer import (
    openai_chunk,
    openai_completion,
    tool_call,
    tool_call_delta,
)

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


def read_generate(body: bytes, model: str, created: float) -> ChatResult:
    """A ``GenerateContentResponse``; a blocked prompt is a ``content_filter`` answer."""
    data = load_json(body, "chat answer")
    usage = gemini_usage(data.get("usageMetadata"))
    model = str(data.get("modelVersion") or model)
    candidates = _candidates(data, strict=True)
    results = [_result(candidate, usage, model) for candidate in candidates]
    answer_id = data.get("responseId")
    result = results[0]
    result.raw = openai_completion(result, answer_id, created)
    result.raw["choices"] = [
        {**openai_completion(r, answer_id, created)["choices"][0], "index": c.index}
        for r, c in zip(results, candidates, strict=True)
    ]
    return result


def read_embeddings(body: bytes, model: str) -> EmbedResult:
    """A ``batchEmbedContents`` answer: ``embeddings[].values`` in request order, and usage.

    Gemini answers floats only, whatever encoding the caller wants: the
    engine converts them once.
    """
    data = load_json(body, "embeddings answer")
    items = data.get("embeddings")
    if not isinstance(items, list):
        raise AttemptFailure(FailureKind.MALFORMED, "embeddings answer has no embeddings list")
    try:
        vectors: list[Vector] = [list(item["values"]) for item in items]
    except (TypeError, KeyError) as exc:
        raise AttemptFailure(
            FailureKind.MALFORMED, f"embeddings answer is malformed: {exc}"
        ) from exc
    return EmbedResult(vectors, embed_usage(data.get("usageMetadata")), model)


class GenerateEventReader:
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
        calls = bool(choices[0]["delta"].get("tool_calls"))
        return ChatChunk(first.content, first.reasoning, finish, usage, model, raw, calls)

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
