"""Base64 embeddings relayed: counted and checked as bytes, the answer given back as it came."""

from __future__ import annotations

import base64
import struct
from typing import Any

import orjson

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from laneway.server import Gateway
from laneway.wire.openai.embeddings import read_embedding_list
from tests.server.asgi_driver import call


def packed(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def answer(vectors: list[str], order: list[int] | None = None) -> bytes:
    items = [
        {"object": "embedding", "index": index, "embedding": vectors[index]}
        for index in (order or range(len(vectors)))
    ]
    usage = {"prompt_tokens": 4, "total_tokens": 4}
    return orjson.dumps({"object": "list", "data": items, "model": "e-1", "usage": usage})


def test_an_answer_in_order_keeps_its_bytes_and_counts_each_vector() -> None:
    body = answer([packed([1.0, 2.0]), packed([3.0, 4.0])])
    result = read_embedding_list(body, "base64", "e")
    assert result.body is not None and result.body.body == body
    assert [vector.length for vector in result.vectors] == [2, 2]  # type: ignore[union-attr]


def test_an_answer_out_of_order_is_put_in_order_and_written_afresh() -> None:
    body = answer([packed([1.0]), packed([2.0, 3.0])], order=[1, 0])
    result = read_embedding_list(body, "base64", "e")
    assert result.body is None
    assert [vector.length for vector in result.vectors] == [1, 2]  # type: ignore[union-attr]


def test_floats_and_answers_without_usage_are_written_afresh() -> None:
    floats = orjson.dumps({"data": [{"index": 0, "embedding": [0.5]}], "model": "e-1"})
    assert read_embedding_list(floats, "float", "e").body is None
    no_usage = orjson.dumps({"data": [{"index": 0, "embedding": packed([0.5])}], "model": "e"})
    assert read_embedding_list(no_usage, "base64", "e").body is None


class Upstream:
    """Answers each request with ``body``, or with ``vector`` once per input when given one."""

    def __init__(self, body: bytes, vector: str | None = None) -> None:
        self.body = body
        self.vector = vector

    def __call__(self, request: HttpRequest) -> HttpResponse:
        body = self.body
        if self.vector is not None:
            inputs = orjson.loads(request.body)["input"]
            body = answer([self.vector] * len(inputs)).replace(b"{", b"{ ")
        return HttpResponse(200, {"content-type": "application/json"}, body)


def gateway(body: bytes, vector: str | None = None, **lane: Any) -> Gateway:
    source = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "e-1"}
    settings = LanewayConfig.model_validate(
        {
            "lanes": {"embed": {"kind": "embed", "sources": [source], **lane}},
            "cache": {"url": ":memory:"},
        }
    )
    transport = MockTransport(Upstream(body, vector))
    return gateway_over(settings, build_engine(settings, {}, transport=transport), {})


async def embed(gw: Gateway, count: int) -> tuple[int, bytes]:
    texts = [f"text {n}" for n in range(count)]
    asked = orjson.dumps({"model": "embed", "input": texts, "encoding_format": "base64"})
    answered = await call(gw, "POST", "/v1/embeddings", asked)
    return answered.status, answered.body


async def test_the_caller_gets_the_upstreams_answer_as_it_came() -> None:
    body = answer([packed([1.0, 2.0, 3.0])] * 2).replace(b"{", b"{ ")
    assert await embed(gateway(body, dimensions=3), 2) == (200, body)


async def test_the_pinned_length_is_still_verified() -> None:
    status, _ = await embed(gateway(answer([packed([1.0, 2.0])] * 2), dimensions=3), 2)
    assert status == 502


async def test_an_answer_partly_from_the_item_cache_is_written() -> None:
    vector = packed([1.0, 2.0, 3.0])
    gw = gateway(b"", vector, dimensions=3, embed_cache=True)
    assert (await embed(gw, 1))[0] == 200
    status, written = await embed(gw, 2)
    assert status == 200
    assert [item["embedding"] for item in orjson.loads(written)["data"]] == [vector, vector]
    assert b"{ " not in written  # written afresh, not the second upstream answer (one vector)
