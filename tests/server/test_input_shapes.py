"""Bad shapes are 400s naming the field; an unexpected exception is still an OpenAI 500.

The first tests replay the issue's repros over real HTTP (a text part whose
``text`` is a number crashed quota sizing; a value nested ~255 deep crashed
the OpenAI adapter's encoder, for chat and embeddings). The last one makes the
upstream transport raise a plain bug and checks the catch-all's four traces:
the 500 body with a request id, the log line, the record (telemetry), the
metric.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.errors import RequestInvalid
from laneway.core.shapes import MAX_DEPTH, check_depth, check_messages
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from laneway.metrics import Metrics, render_metrics
from laneway.sim import RunningSim
from tests.server.asgi_driver import call
from tests.server.support import HELLO, RunningGateway, config, post, serve_gateway, source


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes: dict[str, dict[str, Any]] = {
        "chat": {"sources": [source(sim, "")]},
        "embed": {"kind": "embed", "sources": [source(sim, "dims=4")]},
    }
    with serve_gateway(config(lanes)) as running:
        yield running


CHAT_CASES = [
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "text"),
    ({"messages": [{"role": "user", "content": [{"text": "no type"}]}]}, "type"),
    ({"messages": [{"role": "user", "content": [7]}]}, "messages[0].content[0]"),
    ({"messages": [{"role": "user", "content": {"text": "x"}}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x", "name": 3}]}, "messages[0].name"),
    ({"messages": HELLO, "tools": [{"type": "function"}]}, "tools[0].function"),
    ({"messages": HELLO, "tools": [{"type": "function", "function": {"name": 1}}]}, "function"),
    ({"messages": HELLO, "stop": ["a", 2]}, "stop[1]"),
    ({"messages": HELLO, "metadata": {"deep": nested(255)}}, "body"),
    ({"messages": [{"role": "user", "content": "x", "extra": nested(300)}]}, "body"),
]


@pytest.mark.parametrize(("body", "field"), CHAT_CASES)
async def test_a_badly_shaped_chat_is_a_400_naming_the_field(gw, http, body, field) -> None:
    raw = json.dumps({"model": "chat", **body}).encode()  # orjson stops writing at 254 levels
    status, _, answer = await post(http, f"{gw.v1}/chat/completions", raw)
    assert status == 400, answer
    assert answer["error"]["code"] == "invalid_request"
    assert field in answer["error"]["param"]


@pytest.mark.parametrize("body", [{"input": ["a"], "user": nested(255)}, {"input": nested(255)}])
async def test_a_deeply_nested_embedding_request_is_a_400(gw, http, body) -> None:
    raw = json.dumps({"model": "embed", **body}).encode()
    status, _, answer = await post(http, f"{gw.v1}/embeddings", raw)
    assert status == 400, answer
    assert answer["error"]["param"] in ("body", "input")


async def test_nesting_up_to_the_limit_is_served(gw, http) -> None:
    body = {"model": "chat", "messages": HELLO, "metadata": {"k": nested(MAX_DEPTH - 3)}}
    status, _, answer = await post(http, f"{gw.v1}/chat/completions", body)
    assert status == 200, answer


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": 1, "content": "x"}, "messages[1]"),
        ({"role": "u", "content": 1}, "messages[1].content"),
    ],
)
def test_a_message_of_two_fields_is_checked_like_any_other(message, field) -> None:
    """The role-and-text fast path passes only a string role with a string content."""
    with pytest.raises(RequestInvalid) as refused:
        check_messages([HELLO[0], message])
    assert refused.value.field == field


def test_the_depth_check_walks_without_recursing() -> None:
    with pytest.raises(RequestInvalid):
        check_depth(nested(100_000))
    check_depth(nested(MAX_DEPTH - 1))


class Kept:
    def __init__(self) -> None:
        self.records: list[Any] = []

    def observe(self, record: Any) -> None:
        self.records.append(record)


def broken_upstream(request: HttpRequest) -> HttpResponse:
    raise ZeroDivisionError("a bug deep inside")


async def test_an_unexpected_exception_is_an_openai_500_with_its_traces(caplog) -> None:
    settings = LanewayConfig.model_validate(
        {"lanes": {"chat": {"sources": [{"base_url": "http://up/v1", "model": "m"}]}}}
    )
    metrics, kept = Metrics(), Kept()
    engine = build_engine(
        settings, {}, transport=MockTransport(broken_upstream), observers=[metrics, kept]
    )
    gateway = gateway_over(settings, engine, {}, metrics=metrics)
    body = orjson.dumps({"model": "chat", "messages": HELLO})
    with caplog.at_level(logging.ERROR, logger="laneway.server"):
        path = "/v1/chat/completions"
        answer = await call(gateway, "POST", path, body, [(b"x-request-id", b"r-1")])
        fresh = await call(gateway, "POST", path, body)
    await engine.aclose()
    assert answer.status == 500
    error = orjson.loads(answer.body)
    assert error["error"]["type"] == "server_error" and error["error"]["code"] == "internal_error"
    assert error["laneway"] == {"lane": "chat", "request_id": "r-1"}
    assert answer.headers[b"x-request-id"] == b"r-1"
    assert b"ZeroDivisionError" not in answer.body, "the traceback stays in the log"
    generated = orjson.loads(fresh.body)["laneway"]["request_id"]
    assert len(generated) == 32
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 2 and "r-1" in logged[0].getMessage()
    assert [(r.lane, r.error, r.status, r.meta.request_id) for r in kept.records] == [
        ("chat", "internal_error", 500, "r-1"),
        ("chat", "internal_error", 500, generated),
    ]
    scraped = render_metrics(metrics)[0].decode()
    assert 'laneway_errors_total{error="internal_error",lane="chat",source=""} 2.0' in scraped
