"""Fuzzing the whole HTTP surface: whatever arrives, the answer is never a 5xx or a traceback.

Hypothesis draws requests (any route or none, any method, odd headers, bodies
from random bytes through arbitrary JSON to nearly valid calls with one field
wrong, and values nested past the JSON encoder's limit) and sends each
through the gateway's ASGI entry point in-process, over an upstream that
always answers well. The run is derandomised and bounded, so the suite stays
fast and deterministic.

Every shape of request is sent whatever the draws: each method on each
route, and each field of each valid call replaced by a hostile value, are
explicit examples (``every_shape``), which cost no generation; the drawn
examples vary the values.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from laneway.metrics import Metrics
from laneway.server import Gateway
from tests.server.asgi_driver import call

ROUTES = [
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/responses",
    "/v1/models/chat",
    "/chat/completions",
    "/v1/embeddings",
    "/v1/ocr",
    "/v1/models",
    "/healthz",
    "/readyz",
    "/metrics",
]
CHAT_ANSWER = {
    "id": "x",
    "object": "chat.completion",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
STREAM_ANSWER = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def upstream(request: HttpRequest) -> HttpResponse:
    """An upstream that answers every request well, whatever it was asked."""
    headers = {"content-type": "application/json"}
    if request.url.endswith("/embeddings"):
        inputs = orjson.loads(request.body).get("input") or [""]
        data = [{"index": i, "embedding": [0.1, 0.2]} for i in range(len(inputs))]
        return HttpResponse(200, headers, orjson.dumps({"data": data, "model": "m"}))
    if b'"stream":true' in request.body:
        return HttpResponse(200, {"content-type": "text/event-stream"}, STREAM_ANSWER)
    return HttpResponse(200, headers, orjson.dumps(CHAT_ANSWER))


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[asyncio.Runner, Gateway]]:
    lanes = {
        "chat": {"sources": [{"base_url": "http://up/v1", "model": "m"}]},
        "embed": {"kind": "embed", "sources": [{"base_url": "http://up/v1", "model": "m"}]},
        "ocr": {"kind": "ocr", "sources": [{"base_url": "http://up/v1", "model": "m"}]},
    }
    config = LanewayConfig.model_validate(
        {"lanes": lanes, "server": {"max_request_bytes": "64KiB"}, "telemetry": {"url": "none"}}
    )
    metrics = Metrics()
    engine = build_engine(config, {}, transport=MockTransport(upstream), observers=[metrics])
    with asyncio.Runner() as runner:
        yield runner, gateway_over(config, engine, {}, metrics=metrics)
        runner.run(engine.aclose())


def encode(value: Any) -> bytes:
    """JSON text of ``value`` (the stdlib's: orjson refuses to write past 254 levels)."""
    return json.dumps(value).encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


@st.composite
def deep(draw: st.DrawFn) -> Any:
    """A value nested 40 to 300 levels (lists, objects, or both in turn), around a leaf."""
    value: Any = draw(st.sampled_from(["x", 1, None]))
    shape = draw(st.sampled_from(["list", "object", "both"]))
    for level in range(draw(st.integers(40, 300))):
        as_list = shape == "list" or (shape == "both" and level % 2 == 0)
        value = [value] if as_list else {"k": value}
    return value


anything = json_values | deep()
VALID_BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "model": "chat",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "stop": ["x"],
    },
    "/v1/messages": {
        "model": "chat",
        "max_tokens": 10,
        "system": [{"type": "text", "text": "be brief"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
            },
        ],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "auto"},
        "stop_sequences": ["x"],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    },
    "/v1/responses": {
        "model": "chat",
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
        ],
        "tools": [{"type": "function", "name": "f", "parameters": {}}],
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {}}},
    },
    "/v1/embeddings": {"model": "embed", "input": ["a", "b"], "encoding_format": "float"},
    "/v1/ocr": {
        "model": "ocr",
        "document": {"type": "image_url", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    },
}
PATHS: dict[str, list[tuple[str | int, ...]]] = {
    "/v1/chat/completions": [
        ("model",),
        ("messages",),
        ("messages", 0),
        ("messages", 1, "role"),
        ("messages", 1, "content"),
        ("messages", 1, "content", 0),
        ("messages", 1, "content", 0, "type"),
        ("messages", 1, "content", 0, "text"),
        ("messages", 1, "content", 0, "image_url"),
        ("messages", 1, "name"),
        ("messages", 1, "tool_calls"),
        ("messages", 1, "tool_call_id"),
        ("tools",),
        ("tools", 0),
        ("tools", 0, "type"),
        ("tools", 0, "function"),
        ("tools", 0, "function", "name"),
        ("tools", 0, "function", "parameters"),
        ("tool_choice",),
        ("stop",),
        ("stop", 0),
        ("stream",),
        ("stream_options",),
        ("temperature",),
        ("max_tokens",),
        ("response_format",),
        ("metadata",),
        ("anything_else",),
    ],
    "/v1/messages": [
        ("max_tokens",),
        ("system",),
        ("system", 0, "text"),
        ("messages", 0),
        ("messages", 0, "content"),
        ("messages", 0, "content", 0, "type"),
        ("messages", 1, "content", 0, "input"),
        ("messages", 1, "content", 0, "id"),
        ("messages", 2, "content", 0, "content"),
        ("messages", 2, "content", 0, "tool_use_id"),
        ("tools", 0),
        ("tools", 0, "input_schema"),
        ("tool_choice",),
        ("tool_choice", "type"),
        ("stop_sequences",),
        ("thinking",),
        ("thinking", "budget_tokens"),
        ("stream",),
        ("anything_else",),
    ],
    "/v1/responses": [
        ("input",),
        ("input", 0),
        ("input", 0, "role"),
        ("input", 0, "content"),
        ("input", 0, "content", 0),
        ("input", 1, "arguments"),
        ("input", 1, "call_id"),
        ("input", 2, "output"),
        ("instructions",),
        ("tools", 0),
        ("tools", 0, "parameters"),
        ("tool_choice",),
        ("text",),
        ("text", "format"),
        ("reasoning",),
        ("stream",),
        ("anything_else",),
    ],
    "/v1/embeddings": [
        ("model",),
        ("input",),
        ("input", 0),
        ("dimensions",),
        ("encoding_format",),
        ("user",),
        ("anything_else",),
    ],
    "/v1/ocr": [
        ("model",),
        ("document",),
        ("document", "type"),
        ("document", "image_url"),
        ("pages",),
        ("anything_else",),
    ],
}


STREAMED_ROUTES = ("/v1/chat/completions", "/v1/messages", "/v1/responses")


def replaced(route: str, path: tuple[str | int, ...], value: Any, stream: bool) -> bytes:
    """The valid body of ``route`` with the value at ``path`` replaced by ``value``."""
    body = copy.deepcopy(VALID_BODIES[route])
    *parents, last = path
    target: Any = body
    for key in parents:
        target = target[key]
    target[last] = value
    if route in STREAMED_ROUTES:
        body.setdefault("stream", stream)
    return encode(body)


@st.composite
def nearly_valid(draw: st.DrawFn) -> tuple[str, bytes]:
    """A call endpoint and a valid body of it with one value (at any depth) replaced."""
    route = draw(st.sampled_from(sorted(VALID_BODIES)))
    path = draw(st.sampled_from(PATHS[route]))
    return route, replaced(route, path, draw(anything), draw(st.booleans()))


METHODS = ["POST", "GET", "PUT", "DELETE"]
HOSTILE: list[Any] = [
    None,
    [],
    {},
    "",
    -1,
    1e308,
    True,
    ["x"],
    {"k": "x"},
    [[[[[[[[[[1]]]]]]]]]],
    json.loads("[" * 300 + "]" * 300),
]
"""Values put where a field was, in turn: wrong types, empties, and nests past the encoder."""
BODIES = [b"", b"{}", b"[]", b"null", b"{not json", encode(HOSTILE[-1])]
"""Bodies sent to each method and route, in turn."""


def every_shape(test: Callable[..., None]) -> Callable[..., None]:
    """Add an example for each method on each route, and each field of each valid call."""
    shapes = itertools.product(METHODS, ROUTES)
    for n, (method, route) in enumerate(shapes):
        test = example(request=(method, route, BODIES[n % len(BODIES)]), extra=[])(test)
    fields = [(route, path) for route in sorted(PATHS) for path in PATHS[route]]
    for n, (route, path) in enumerate(fields):
        body = replaced(route, path, HOSTILE[n % len(HOSTILE)], stream=n % 2 == 0)
        test = example(request=("POST", route, body), extra=[])(test)
    return test


EXAMPLES = 50
"""Drawn examples, beyond the explicit ones: they vary the values, the shapes being all sent
(200 before every shape was an explicit example)."""
bodies = st.binary(max_size=64) | json_values.map(encode) | deep().map(encode)
header_values = st.binary(max_size=16) | st.sampled_from([b"-1", b"0", b"nan", b"1e400", b"5000"])
headers = st.lists(
    st.tuples(
        st.sampled_from(
            [
                b"authorization",
                b"x-laneway-deadline-ms",
                b"x-stainless-timeout",
                b"x-stainless-read-timeout",
                b"x-request-id",
                b"content-type",
            ]
        ),
        header_values,
    ),
    max_size=3,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # caplog is cleared per example
    ],
)
@given(
    request=st.tuples(
        st.sampled_from(["POST", "GET", "PUT", "DELETE"]),
        st.sampled_from(ROUTES) | st.text(max_size=12).map(lambda t: "/" + t),
        bodies,
    )
    | nearly_valid().map(lambda call: ("POST", *call)),
    extra=headers,
)
@every_shape
def test_no_request_gets_a_5xx_or_a_traceback(
    gateway: tuple[asyncio.Runner, Gateway],
    caplog: pytest.LogCaptureFixture,
    request: tuple[str, str, bytes],
    extra: list[tuple[bytes, bytes]],
) -> None:
    runner, app = gateway
    method, path, body = request
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        answer = runner.run(call(app, method, path, body, extra))
    assert answer.status < 500, (answer.status, answer.body)
    assert b"Traceback" not in answer.body
    assert not [r for r in caplog.records if r.exc_info], caplog.text
