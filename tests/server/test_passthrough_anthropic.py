"""The pass-through fast path on ``/v1/messages``: an Anthropic caller on an Anthropic source.

The source receives the caller's Messages body as it was sent, only its
``model`` changed, so what the translation through OpenAI's shape drops reaches it
(``cache_control`` marks, the exact thinking budget), and the caller gets the
source's ``message`` as it came (its real ``stop_sequence``). A body the
translation would change for the source to take it (another source's
unsigned reasoning, a JSON ``output_config``) is written afresh, as before.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from laneway.server import Gateway
from tests.server.asgi_driver import Answer, call

MESSAGE = b"""{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x-2025",
 "content": [{"type": "text", "text": "Paris"}, {"type": "text", "text": " is sunny"}],
 "stop_reason": "stop_sequence", "stop_sequence": "END",
 "usage": {"input_tokens": 7, "cache_read_input_tokens": 100, "output_tokens": 3}}"""
JSON_ANSWER = orjson.dumps(
    {
        "id": "msg_02",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "tool_use", "id": "t", "name": "json_answer", "input": {"a": 1}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 7, "output_tokens": 3},
    }
)


class Upstream:
    """An Anthropic source: answers ``answer``, keeps every request body as bytes."""

    def __init__(self, answer: bytes = MESSAGE) -> None:
        self.answer = answer
        self.bodies: list[bytes] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.bodies.append(request.body)
        return HttpResponse(200, {"content-type": "application/json"}, self.answer)


def gateway(upstream: Upstream) -> Gateway:
    source: dict[str, Any] = {"provider": "anthropic", "model": "claude-x", "max_tokens": 1024}
    source["base_url"] = "http://127.0.0.1:9/v1"
    settings = LanewayConfig.model_validate({"lanes": {"claude": {"sources": [source]}}})
    return gateway_over(settings, build_engine(settings, {}, transport=MockTransport(upstream)), {})


async def post(gw: Gateway, body: dict[str, Any] | bytes) -> Answer:
    sent = body if isinstance(body, bytes) else orjson.dumps(body)
    return await call(gw, "POST", "/v1/messages", sent)


CACHED_SYSTEM = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]


async def test_the_source_gets_the_callers_body_and_the_caller_the_sources_message() -> None:
    upstream = Upstream()
    sent = orjson.dumps(
        {
            "model": "claude",
            "max_tokens": 64,
            "system": CACHED_SYSTEM,
            "stop_sequences": ["END"],
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
        }
    ).replace(b'"max_tokens":64', b'"max_tokens":  8000')
    answer = await post(gateway(upstream), sent)
    assert answer.status == 200
    received = orjson.loads(upstream.bodies[0])
    assert received == {**orjson.loads(sent), "model": "claude-x"}
    assert list(received) == list(orjson.loads(sent))  # the caller's order of fields
    assert answer.body == MESSAGE
    assert answer.headers[b"x-laneway-usage"] == b"provider"


async def test_another_sources_unsigned_reasoning_is_translated_away() -> None:
    upstream = Upstream()
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": ""}]},
        {"role": "user", "content": "and?"},
    ]
    answer = await post(
        gateway(upstream), {"model": "claude", "max_tokens": 64, "messages": history}
    )
    assert answer.status == 200
    sent = orjson.loads(upstream.bodies[0])
    assert sent["model"] == "claude-x"
    assert all(turn["role"] == "user" for turn in sent["messages"])  # the empty turn left out


async def test_a_json_answer_is_asked_by_a_forced_tool_and_written_as_text() -> None:
    upstream = Upstream(JSON_ANSWER)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    body = {
        "model": "claude",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "a?"}],
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
    }
    answer = await post(gateway(upstream), body)
    assert answer.status == 200
    assert orjson.loads(upstream.bodies[0])["tool_choice"]["name"] == "json_answer"
    message = orjson.loads(answer.body)
    assert message["content"] == [{"type": "text", "text": '{"a":1}'}]
    assert message["stop_reason"] == "end_turn"


def sse(kind: str, payload: dict[str, Any]) -> bytes:
    return (
        b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **payload}) + b"\n\n"
    )


STREAM = b"".join(
    [
        sse("message_start", {"message": {"id": "msg_03", "model": "claude-x", "usage": {}}}),
        sse("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        sse("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Paris"}}),
        sse("content_block_stop", {"index": 0}),
        sse(
            "message_delta",
            {
                "delta": {"stop_reason": "end_turn"},
                "usage": {"input_tokens": 7, "output_tokens": 1},
            },
        ),
        sse("message_stop", {}),
    ]
)


async def test_a_streamed_call_sends_the_callers_body_too() -> None:
    upstream = Upstream(STREAM)
    sent = {
        "model": "claude",
        "max_tokens": 64,
        "stream": True,
        "system": CACHED_SYSTEM,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    answer = await post(gateway(upstream), sent)
    assert answer.status == 200
    assert orjson.loads(upstream.bodies[0]) == {**sent, "model": "claude-x"}
    assert b'"text":"Paris"' in answer.body
