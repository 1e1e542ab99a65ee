"""The Gemini adapter's pure parts against recorded answer shapes."""

from __future__ import annotations

import orjson
import pytest

from laneway.core.errors import AttemptFailure, RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.transport import HttpResponse
from laneway.core.types import ChatRequest, EmbedRequest, Reasoning
from laneway.core.vectors import floats
from laneway.providers.gemini import GeminiProvider
from laneway.wire.gemini.answer import gemini_usage
from tests.providers.support import fixture, sse_events

ROOT = "https://generativelanguage.googleapis.com/v1beta"
PROVIDER = GeminiProvider(ROOT, "gemini-2.5-flash", "secret-key")
NOW = 1_760_000_000.0


def ok(name: str) -> HttpResponse:
    return HttpResponse(200, {"content-type": "application/json"}, fixture(name))


def test_chat_request_maps_roles_system_and_parameters() -> None:
    messages: list[ChatMessage] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Again"},
    ]
    params = {"temperature": 0.2, "max_tokens": 64, "top_p": 0.9, "stop": "END", "stream": True}
    http = PROVIDER.chat_request(ChatRequest(messages, params), stream=False)
    body = orjson.loads(http.body)
    assert http.url == f"{ROOT}/models/gemini-2.5-flash:generateContent"
    assert http.headers["x-goog-api-key"] == "secret-key"
    assert "secret-key" not in http.url
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "Hi"),
        ("model", "Hello."),
        ("user", "Again"),
    ]
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 64,
        "topP": 0.9,
        "stopSequences": ["END"],
    }


def test_stream_request_asks_for_sse() -> None:
    http = PROVIDER.chat_request(ChatRequest([{"role": "user", "content": "Hi"}]), stream=True)
    assert http.url.endswith(":streamGenerateContent?alt=sse")


@pytest.mark.parametrize(
    ("messages", "params", "field"),
    [
        ([{"role": "user", "content": "Hi"}], {"tools": {}}, "tools"),
        ([{"role": "tool", "content": "42"}], {}, "messages[0].tool_call_id"),
        (
            [{"role": "tool", "content": "42", "tool_call_id": "call_1"}],
            {},
            "messages[0].tool_call_id",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
            {},
            "messages[0].content[0].image_url.url",
        ),
    ],
)
def test_malformed_requests_are_refused_naming_the_field(messages, params, field) -> None:
    with pytest.raises(RequestInvalid) as err:
        PROVIDER.chat_request(ChatRequest(messages, params), stream=False)
    assert err.value.field == field


def test_generate_content_answer() -> None:
    result = PROVIDER.parse_chat(ok("gemini_generate.json"), NOW)
    assert result.content == "Hello! How can I help you today?"
    assert result.reasoning_content is not None
    assert result.reasoning_content.startswith("**Weighing the request**")
    assert result.reasoning is Reasoning.PRESENT
    assert result.finish_reason == "stop"
    assert result.model == "gemini-2.5-flash"
    usage = result.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (1041, 51, 1092)
    assert (usage.reasoning_tokens, usage.cached_tokens, usage.source) == (42, 1024, "provider")
    assert result.raw["object"] == "chat.completion"
    assert result.raw["id"] == "mJ3haPXKD4_b7M8Pv_fEqAQ"
    assert result.raw["usage"]["completion_tokens_details"] == {"reasoning_tokens": 42}
    assert result.raw["choices"][0]["message"]["content"] == result.content


def test_proto3_zero_counts_are_zero_but_missing_metadata_is_unknown() -> None:
    zero_thoughts = gemini_usage({"promptTokenCount": 5, "candidatesTokenCount": 2})
    assert (zero_thoughts.reasoning_tokens, zero_thoughts.cached_tokens) == (0, 0)
    assert zero_thoughts.total_tokens == 7
    assert not gemini_usage(None).known
    assert not gemini_usage({"totalTokenCount": 3}).known


def test_blocked_prompt_is_a_content_filter_answer() -> None:
    result = PROVIDER.parse_chat(ok("gemini_blocked.json"), NOW)
    assert (result.content, result.finish_reason) == ("", "content_filter")
    assert result.usage.prompt_tokens == 7


def test_answer_without_candidates_or_block_reason_is_malformed() -> None:
    answer = HttpResponse(200, {}, b'{"usageMetadata": {"promptTokenCount": 3}}')
    with pytest.raises(AttemptFailure) as err:
        PROVIDER.parse_chat(answer, NOW)
    assert err.value.kind == "malformed"


@pytest.mark.parametrize(
    ("reason", "mapped"),
    [("MAX_TOKENS", "length"), ("SAFETY", "content_filter"), ("OTHER", "other")],
)
def test_finish_reasons(reason: str, mapped: str) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}
    result = PROVIDER.parse_chat(HttpResponse(200, {}, orjson.dumps(body)), NOW)
    assert result.finish_reason == mapped


def test_stream_events() -> None:
    chunks = sse_events(PROVIDER, "gemini_stream.sse")
    assert all(chunk is not None for chunk in chunks)
    first, middle, last = chunks
    assert first is not None and middle is not None and last is not None
    assert first.reasoning_content.startswith("**Planning a greeting**")
    assert (first.content, first.usage) == ("", None)
    assert middle.content == "Hello! How can" and middle.usage is None
    assert "usage" not in (middle.raw or {})
    assert last.content == " I help you today?" and last.finish_reason == "stop"
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (8, 40)
    assert last.usage.reasoning_tokens == 31
    raw = last.raw or {}
    assert raw["object"] == "chat.completion.chunk"
    assert raw["choices"][0]["finish_reason"] == "stop"
    assert raw["usage"]["total_tokens"] == 48


def test_stream_error_event_cuts_and_garbage_is_malformed() -> None:
    with pytest.raises(AttemptFailure) as err:
        PROVIDER.stream_parser().parse_event(b'{"error": {"code": 503, "message": "overloaded"}}')
    assert err.value.kind == "cut"
    with pytest.raises(ValueError):
        PROVIDER.stream_parser().parse_event(b"{not json")


def test_batch_embed_request_pins_output_dimensionality() -> None:
    http = PROVIDER.embed_request(EmbedRequest(["a", "b"], dimensions=3072))
    body = orjson.loads(http.body)
    assert http.url == f"{ROOT}/models/gemini-2.5-flash:batchEmbedContents"
    assert body["requests"][1] == {
        "model": "models/gemini-2.5-flash",
        "content": {"parts": [{"text": "b"}]},
        "outputDimensionality": 3072,
    }
    unpinned = orjson.loads(PROVIDER.embed_request(EmbedRequest(["a"])).body)
    assert "outputDimensionality" not in unpinned["requests"][0]


def test_batch_embed_answer_reads_usage_metadata() -> None:
    result = PROVIDER.parse_embed(ok("gemini_batch_embed.json"), NOW)
    vectors = [floats(vector) for vector in result.vectors]
    assert [len(vector) for vector in vectors] == [8, 8]
    assert vectors[0][0] == pytest.approx(0.0123)
    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (12, 12)
    assert result.usage.source == "provider"


def test_batch_embed_answer_without_usage_is_unknown_never_zero() -> None:
    body = orjson.loads(fixture("gemini_batch_embed.json"))
    del body["usageMetadata"]
    result = PROVIDER.parse_embed(HttpResponse(200, {}, orjson.dumps(body)), NOW)
    assert result.usage.prompt_tokens is None
    assert not result.usage.known


def test_quota_error_reads_retry_info_as_pushback() -> None:
    failure = PROVIDER.failure(429, {}, fixture("gemini_error_429.json"), NOW)
    assert (failure.kind, failure.status, failure.retry_after) == ("status", 429, 24.0)
    assert "exceeded your current quota" in failure.message


def test_retry_after_header_wins_over_retry_info() -> None:
    failure = PROVIDER.failure(429, {"retry-after": "3"}, fixture("gemini_error_429.json"), NOW)
    assert failure.retry_after == 3.0


def test_token_limit_error_is_context_length() -> None:
    failure = PROVIDER.failure(400, {}, fixture("gemini_error_context.json"), NOW)
    assert failure.kind == "context_length"
    plain = PROVIDER.failure(400, {}, b'{"error": {"code": 400, "message": "bad field"}}', NOW)
    assert plain.kind == "rejected"
