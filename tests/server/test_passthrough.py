"""The pass-through fast path: an OpenAI caller on an OpenAI-shaped source.

The upstream receives the caller's fields with only ``model`` changed
(unknown fields kept), and the caller receives the upstream's answer as it
came, once parsed for its usage and checked. What must change is still
written afresh: namespaced fields for native sources, a ``usage: null``
dropped, an estimated usage written in; a malformed answer still fails its
attempt (a 502), never reaching the caller.
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

ANSWER = b"""{
  "id": "chatcmpl-1",
  "object": "chat.completion",
  "created": 1700000000,
  "model": "upstream-model-2025",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "caf\\u00e9"},
               "finish_reason": "stop", "logprobs": null}],
  "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
  "system_fingerprint": "fp_1"
}"""


class Upstream:
    """Answers each source's URL with a fixed body; keeps every request body as bytes."""

    def __init__(self, answers: dict[str, bytes]) -> None:
        self.answers = answers
        self.bodies: list[bytes] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.bodies.append(request.body)
        for marker, body in self.answers.items():
            if f"/{marker}/" in request.url:
                return HttpResponse(200, {"content-type": "application/json"}, body)
        return HttpResponse(200, {"content-type": "application/json"}, ANSWER)


def source(marker: str, model: str = "m-1") -> dict[str, Any]:
    return {"provider": "openai", "base_url": f"http://127.0.0.1:9/{marker}/v1", "model": model}


def gateway(upstream: Upstream, **lane: Any) -> Gateway:
    settings = LanewayConfig.model_validate(
        {"lanes": {"chat": {"sources": [source("ok")], **lane}}}
    )
    return gateway_over(settings, build_engine(settings, {}, transport=MockTransport(upstream)), {})


async def post(gw: Gateway, body: bytes) -> Answer:
    return await call(gw, "POST", "/v1/chat/completions", body)


async def test_the_upstream_gets_the_callers_fields_with_only_the_model_changed() -> None:
    upstream = Upstream({})
    sent = (
        b'{ "messages" : [{"role": "user", "content": "hi \\u00e9"}],\n'
        b'  "model" : "chat", "temperature": 0.50, "vendor_extra": {"k": [1, 2]} }'
    )
    answer = await post(gateway(upstream), sent)
    assert answer.status == 200
    assert [orjson.loads(body) for body in upstream.bodies] == [
        {**orjson.loads(sent), "model": "m-1"}
    ]


async def test_the_caller_gets_the_upstreams_bytes_as_they_came() -> None:
    answer = await post(
        gateway(Upstream({})), b'{"model":"chat","messages":[{"role":"user","content":"hi"}]}'
    )
    assert answer.status == 200
    assert answer.body == ANSWER
    assert answer.headers[b"x-laneway-usage"] == b"provider"


async def test_a_body_whose_model_key_is_not_alone_is_written_afresh() -> None:
    upstream = Upstream({})
    sent = (
        b'{"model":"chat","metadata":{"model":"chat"},"messages":[{"role":"user","content":"x"}]}'
    )
    assert (await post(gateway(upstream), sent)).status == 200
    received = orjson.loads(upstream.bodies[0])
    assert received["model"] == "m-1"
    assert received["metadata"] == {"model": "chat"}


async def test_fields_for_native_sources_stay_behind() -> None:
    upstream = Upstream({})
    sent = (
        b'{"model":"chat","anthropic":{"top_k":5},"stream":false,'
        b'"messages":[{"role":"user","content":"x"}]}'
    )
    assert (await post(gateway(upstream), sent)).status == 200
    received = orjson.loads(upstream.bodies[0])
    assert "anthropic" not in received and "stream" not in received
    assert received["model"] == "m-1"


async def test_a_null_usage_is_dropped_and_an_estimate_written_in() -> None:
    nulled = ANSWER.replace(
        b'{"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}', b"null"
    )
    sent = b'{"model":"chat","messages":[{"role":"user","content":"hi"}]}'
    plain = await post(gateway(Upstream({"ok": nulled})), sent)
    assert "usage" not in orjson.loads(plain.body)
    assert plain.headers[b"x-laneway-usage"] == b"none"
    estimating = gateway(Upstream({"ok": nulled}), estimate_missing_usage=True)
    estimated = orjson.loads((await post(estimating, sent)).body)
    assert estimated["usage"]["prompt_tokens"] > 0
    assert estimated["choices"][0]["message"]["content"] == "café"


async def test_a_malformed_answer_is_never_relayed() -> None:
    upstream = Upstream({"ok": ANSWER[:-20]})
    answer = await post(
        gateway(upstream), b'{"model":"chat","messages":[{"role":"user","content":"hi"}]}'
    )
    assert answer.status == 502
    assert orjson.loads(answer.body)["laneway"]["attempts"][0]["outcome"] == "malformed"
