"""Anthropic's ``message``, read (a source's answer) and written (a caller's answer).

Read: text blocks are the content, thinking blocks the reasoning, ``tool_use``
blocks tool calls (``finish_reason: tool_calls``), and the forced
``json_answer`` tool's input the content of a JSON answer. Anthropic counts
cache reads and writes apart from ``input_tokens``; laneway's prompt tokens
are their sum, with the reads as ``cached_tokens`` and the writes as
``cache_write_tokens``, each priced at its own rate. Thinking is billed inside
``output_tokens`` and never reported apart: ``reasoning_tokens`` stays
unknown. Thinking blocks, with their signatures, also come back whole as the
message's ``thinking_blocks`` (LiteLLM's name), which a caller hands back in
the history: Anthropic wants them before the tool calls of a thinking turn.

Written: content comes back as blocks: ``thinking`` (the source's reasoning:
an Anthropic source's signed blocks as they came, ``redacted_thinking``
included; another source's reasoning with an empty ``signature``), ``text``,
then one ``tool_use`` per tool call. Stop reasons map from OpenAI's: ``stop``
is ``end_turn``, ``length`` is ``max_tokens``, ``tool_calls`` is
``tool_use``, ``content_filter`` is ``refusal``. OpenAI's format does not say
which stop sequence ended an answer, so ``stop_sequence`` is always ``null``
and a stop sequence reads as ``end_turn``. Usage follows Anthropic's split;
figures the source did not report are ``null``, never 0.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.passthrough import ANTHROPIC_MESSAGES, AnswerBody
from laneway.core.results import ChatResult
from laneway.core.types import NO_USAGE, LLMResponse, Reasoning, Usage
from laneway.wire.anthropic.request_writer import JSON_TOOL
from laneway.wire.blocks import answer_parts
from laneway.wire.decoding import load_json, token_count
from laneway.wire.openai.chat_answer import openai_completion, tool_call

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}
"""OpenAI's finish reason for each of Anthropic's stop reasons."""
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def read_message(body: bytes, model: str, created: float) -> ChatResult:
    """A ``message`` as a ``ChatResult`` whose ``raw`` is OpenAI's ``chat.completion``."""
    data = load_json(body, "chat answer")
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise AttemptFailure(FailureKind.MALFORMED, "chat answer has no content list")
    kinds = [b for b in blocks if isinstance(b, dict)]
    thinking = "".join(str(b.get("thinking", "")) for b in kinds if b.get("type") == "thinking")
    thoughts = [b for b in kinds if b.get("type") in ("thinking", "redacted_thinking")]
    texts = [str(b.get("text", "")) for b in kinds if b.get("type") == "text"]
    uses = [b for b in kinds if b.get("type") == "tool_use"]
    answers = [_json_text(b.get("input")) for b in uses if b.get("name") == JSON_TOOL]
    calls = [_call(b) for b in uses if b.get("name") != JSON_TOOL]
    finish = anthropic_finish_reason(data.get("stop_reason"))
    result = ChatResult(
        content="".join(answers) if answers else "".join(texts),
        usage=anthropic_usage(data.get("usage")),
        model=str(data.get("model") or model),
        finish_reason="stop" if answers and finish == "tool_calls" else finish,
        reasoning_content=thinking or None,
        reasoning=Reasoning.PRESENT if thoughts else Reasoning.ABSENT,
        tool_calls=calls,
    )
    result.raw = openai_completion(result, data.get("id"), created)
    if thoughts:
        result.raw["choices"][0]["message"]["thinking_blocks"] = thoughts
    if not answers:
        result.body = AnswerBody(ANTHROPIC_MESSAGES, body)
    return result


def anthropic_usage(data: object) -> Usage:
    """Anthropic ``usage``: prompt = input + cache reads + cache writes; unknown parts stay None."""
    if not isinstance(data, dict):
        return NO_USAGE
    fresh = token_count(data.get("input_tokens"))
    output = token_count(data.get("output_tokens"))
    if fresh is None and output is None:
        return NO_USAGE
    read = token_count(data.get("cache_read_input_tokens"))
    written = token_count(data.get("cache_creation_input_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=None if prompt is None or output is None else prompt + output,
        cached_tokens=read if fresh is not None else None,
        cache_write_tokens=written if fresh is not None else None,
        source="provider",
    )


def anthropic_finish_reason(reason: object) -> str | None:
    """OpenAI's finish reason for Anthropic's stop reason (an unknown one passes as is)."""
    return FINISH_REASONS.get(reason, reason) if isinstance(reason, str) else None


def _json_text(value: object) -> str:
    return orjson.dumps(value if value is not None else {}).decode()


def _call(block: dict[str, Any]) -> dict[str, Any]:
    arguments = _json_text(block.get("input"))
    return tool_call(str(block.get("id", "")), str(block.get("name", "")), arguments)


def message_body(result: LLMResponse) -> bytes:
    """The complete answer as an Anthropic ``message``.

    An Anthropic source's own message goes back as it came (its usage the
    source's; a JSON answer, carried by the forced tool, is written).
    ``MalformedAnswer`` when a tool call's arguments are no JSON object.
    """
    relayed = result.answer_body
    if (
        relayed is not None
        and relayed.wire == ANTHROPIC_MESSAGES
        and result.usage.source == "provider"
    ):
        return relayed.body
    parts = answer_parts(result)
    content: list[dict[str, Any]] = list(parts.thinking_blocks)
    if parts.reasoning and not content:
        content.append({"type": "thinking", "thinking": parts.reasoning, "signature": ""})
    if parts.text:
        content.append({"type": "text", "text": parts.text})
    content.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input()}
        for call in parts.tool_calls
    )
    message = message_head(parts.id, parts.model, content, parts.finish_reason)
    message["usage"] = anthropic_usage_fields(result.usage)
    return orjson.dumps(message)


def message_head(
    answer_id: str, model: str, content: list[dict[str, Any]], finish: str | None
) -> dict[str, Any]:
    """A ``message`` without its usage."""
    return {
        "id": answer_id if answer_id.startswith("msg_") else f"msg_{answer_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(finish),
        "stop_sequence": None,
    }


def stop_reason(finish_reason: str | None) -> str | None:
    """Anthropic's stop reason for OpenAI's finish reason (an unknown one passes as is)."""
    if finish_reason is None:
        return None
    return _STOP_REASONS.get(finish_reason, finish_reason)


def anthropic_usage_fields(usage: Usage | None) -> dict[str, Any]:
    """Usage in Anthropic's fields; ``null`` where the source reported nothing."""
    if usage is None or not usage.known:
        return {"input_tokens": None, "output_tokens": None}
    cached, written = usage.cached_tokens, usage.cache_write_tokens
    prompt = usage.prompt_tokens
    out: dict[str, Any] = {
        "input_tokens": None if prompt is None else prompt - (cached or 0) - (written or 0),
        "output_tokens": usage.completion_tokens,
    }
    if cached is not None:
        out["cache_read_input_tokens"] = cached
    if written is not None:
        out["cache_creation_input_tokens"] = written
    return out


def anthropic_error_body(status: int, described: dict[str, Any]) -> dict[str, Any]:
    """An error in Anthropic's shape, from laneway's OpenAI-shaped account of it.

    ``described`` is ``{"error": {"message", ...}, "laneway": {...}}``; the
    ``laneway`` part stays beside Anthropic's ``error``.
    """
    error = described.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    kind = _ERROR_TYPES.get(status, "api_error")
    out: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": str(message or "")}}
    if "laneway" in described:
        out["laneway"] = described["laneway"]
    return out
