"""The Anthropic adapter's pure parts against recorded answer shapes."""

from __future__ import annotations

import orjson
import pytest

from laneway.core.errors import AttemptFailure, RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.transport import HttpResponse
from laneway.core.types import ChatRequest, EmbedRequest, Reasoning
from laneway.providers.anthropic import AnthropicProvider
from laneway.wire.anthropic.answer import anthropic_usage
from tests.providers.support import fixture, sse_events

ROOT = "https://api.anthropic.com/v1"
PROVIDER = AnthropicProvider(ROOT, "claude-sonnet-4-5", "secret-key", max_tokens=1024)
NOW = 1_760_000_000.0
HI: list[ChatMessage] = [{"role": "user", "content": "Hi"}]


def body_of(request: ChatRequest, provider: AnthropicProvider = PROVIDER, stream: bool = False):
    http = provider.chat_request(request, stream=stream)
    return http, orjson.loads(http.body)


def test_request_puts_system_apart_and_always_sends_max_tokens() -> None:
    messages: list[ChatMessage] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Again"},
    ]
    http, body = body_of(ChatRequest(messages, {"temperature": 0.1, "stop": ["END"]}))
    assert http.url == f"{ROOT}/messages"
    assert http.headers["x-api-key"] == "secret-key"
    assert http.headers["anthropic-version"] == "2023-06-01"
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 1024
    assert (body["temperature"], body["stop_sequences"]) == (0.1, ["END"])
    assert "stream" not in body


def test_callers_max_tokens_wins_and_stream_is_flagged() -> None:
    _, body = body_of(ChatRequest(HI, {"max_completion_tokens": 50}), stream=True)
    assert (body["max_tokens"], body["stream"]) == (50, True)


def test_without_any_max_tokens_the_request_is_refused() -> None:
    bare = AnthropicProvider(ROOT, "claude-sonnet-4-5", None)
    with pytest.raises(RequestInvalid) as err:
        bare.chat_request(ChatRequest(HI), stream=False)
    assert err.value.field == "max_tokens"


def test_there_is_no_embeddings_api() -> None:
    with pytest.raises(RequestInvalid, match="no embeddings API"):
        PROVIDER.embed_request(EmbedRequest(["a"]))


def test_message_answer_with_thinking_and_cache_counts() -> None:
    result = PROVIDER.parse_chat(HttpResponse(200, {}, fixture("anthropic_message.json")), NOW)
    assert result.content == "Hello! How can I help you today?"
    assert result.reasoning_content == "The user wants a short greeting. I will answer in one line."
    assert result.reasoning is Reasoning.PRESENT
    assert result.finish_reason == "stop"
    assert result.model == "claude-sonnet-4-5-20250929"
    usage = result.usage
    assert (usage.prompt_tokens, usage.cached_tokens) == (21 + 188 + 1500, 1500)
    assert (usage.completion_tokens, usage.total_tokens) == (46, 1709 + 46)
    assert usage.reasoning_tokens is None
    assert result.raw["object"] == "chat.completion"
    details = result.raw["usage"]["prompt_tokens_details"]
    assert details == {"cached_tokens": 1500, "cache_write_tokens": 188}
    assert usage.cache_write_tokens == 188


def test_answer_without_thinking_blocks_did_not_reason() -> None:
    body = orjson.loads(fixture("anthropic_message.json"))
    body["content"] = body["content"][1:]
    body["stop_reason"] = "max_tokens"
    result = PROVIDER.parse_chat(HttpResponse(200, {}, orjson.dumps(body)), NOW)
    assert (result.reasoning, result.reasoning_content) == (Reasoning.ABSENT, None)
    assert result.finish_reason == "length"


def test_usage_parts_left_out_stay_unknown() -> None:
    assert not anthropic_usage(None).known
    output_only = anthropic_usage({"output_tokens": 15})
    assert (output_only.prompt_tokens, output_only.completion_tokens) == (None, 15)
    assert output_only.total_tokens is None


def test_stream_events() -> None:
    chunks = sse_events(PROVIDER, "anthropic_stream.sse")
    assert chunks[-1] is None
    parsed = [c for c in chunks if c is not None]
    start = parsed[0]
    assert start.model == "claude-sonnet-4-5-20250929"
    assert (start.raw or {})["id"] == "msg_01T1x1fJ34qAmk2tNTrN7Up6"
    assert (
        "".join(c.reasoning_content for c in parsed)
        == "The user wants a greeting. One line will do."
    )
    assert "".join(c.content for c in parsed) == "Hello! How can I help you today?"
    final = parsed[-1]
    assert final.finish_reason == "stop"
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.cached_tokens) == (1521, 1500)
    assert final.usage.completion_tokens == 35
    assert (final.raw or {})["usage"]["total_tokens"] == 1521 + 35


def test_stream_events_without_content_forward_nothing() -> None:
    for payload in (b'{"type": "ping"}', b'{"type":"content_block_stop","index":0}'):
        chunk = PROVIDER.stream_parser().parse_event(payload)
        assert chunk is not None and chunk.raw is None and not chunk.content


def test_stream_error_event_cuts() -> None:
    event = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    with pytest.raises(AttemptFailure) as err:
        PROVIDER.stream_parser().parse_event(event)
    assert err.value.kind == "cut"


def test_overloaded_is_a_retryable_status() -> None:
    failure = PROVIDER.failure(
        529, {"retry-after": "2"}, fixture("anthropic_error_overloaded.json"), NOW
    )
    assert (failure.kind, failure.status, failure.retry_after) == ("status", 529, 2.0)
    assert "Overloaded" in failure.message


def test_prompt_too_long_is_context_length() -> None:
    failure = PROVIDER.failure(400, {}, fixture("anthropic_error_context.json"), NOW)
    assert failure.kind == "context_length"
