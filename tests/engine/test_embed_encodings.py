"""A relay's embeddings kept in the caller's encoding: checked, priced, cached like floats."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest

from laneway import Laneway
from laneway.cache import SqliteCacheStore
from laneway.config.models import LanewayConfig
from laneway.core.types import EmbeddingResponse, EmbedRequest
from laneway.core.vectors import EncodedVector, VectorEncoding
from laneway.errors import DimensionMismatch
from tests.engine.spy import SpyTransport
from tests.engine.test_records import Collect
from tests.helpers import sim_url, unique_spec

TEXTS = ["alpha", "beta", "gamma"]


def lane_config(sim, spec: str, **lane: Any) -> LanewayConfig:
    source = {
        "provider": "openai",
        "base_url": sim_url(sim, spec),
        "model": "sim-model",
        "price": {"input": 1.0},
    }
    body = {"kind": "embed", "dimensions": 16, "sources": [source], **lane}
    return LanewayConfig.model_validate({"lanes": {"lane": body}})


def as_float32(vector: list[float]) -> list[float]:
    return list(struct.unpack(f"<{len(vector)}f", struct.pack(f"<{len(vector)}f", *vector)))


def decoded(item: EncodedVector) -> list[float]:
    if item.encoding == "base64":
        raw = base64.b64decode(item.text)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    values: list[float] = orjson.loads(item.text)
    return values


async def embed(lw: Laneway, encoding: VectorEncoding | None) -> EmbeddingResponse:
    return await lw.engine.embed("lane", EmbedRequest(TEXTS, encoding=encoding))


async def test_each_encoding_is_what_the_caller_asked_and_equals_the_floats(sim) -> None:
    spy = SpyTransport()
    config = lane_config(sim, unique_spec("ok"))
    async with Laneway.from_settings(config, environ={}, transport=spy) as lw:
        plain = await embed(lw, None)
        as_json = await embed(lw, "float")
        packed = await embed(lw, "base64")
    assert [body.get("encoding_format") for body in spy.bodies] == [None, None, "base64"]
    assert plain.encoded == [] and as_json.vectors == [] and packed.vectors == []
    assert [e.encoding for e in as_json.encoded] == ["float"] * 3
    assert [e.encoding for e in packed.encoded] == ["base64"] * 3
    assert [e.length for e in packed.encoded + as_json.encoded] == [16] * 6
    assert [decoded(e) for e in as_json.encoded] == plain.vectors
    assert [decoded(e) for e in packed.encoded] == [as_float32(v) for v in plain.vectors]
    for response in (as_json, packed):
        assert response.usage == plain.usage and response.usage.prompt_tokens is not None
        assert response.cost == plain.cost and response.cost is not None


@pytest.mark.parametrize("encoding", [None, "float", "base64"])
async def test_a_wrong_length_is_refused_in_every_encoding(sim, encoding) -> None:
    config = lane_config(sim, unique_spec("dims=12"))
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(DimensionMismatch, match="length 12, expected 16"):
            await embed(lw, encoding)


@pytest.mark.parametrize("encoding", ["float", "base64"])
async def test_missing_usage_stays_unknown_when_encoded(sim, encoding) -> None:
    config = lane_config(sim, unique_spec("nousage"))
    async with Laneway.from_settings(config, environ={}) as lw:
        response = await embed(lw, encoding)
    assert response.usage.prompt_tokens is None and response.usage.source == "none"
    assert response.cost is None and response.cost_unknown == "usage unknown"


async def test_records_are_the_same_whatever_the_encoding(sim) -> None:
    sink = Collect()
    config = lane_config(sim, unique_spec("ok"))
    async with Laneway.from_settings(config, environ={}, observers=[sink]) as lw:
        for encoding in (None, "float", "base64"):
            await embed(lw, encoding)
    fields = [
        (r.embedding_dim, r.usage, r.outcome, r.cache, r.status, r.error, r.source, r.model)
        for r in sink.records
    ]
    assert len(set(fields)) == 1 and fields[0][0] == 16


async def test_the_item_cache_serves_every_encoding_from_any_other(sim, tmp_path: Path) -> None:
    """A vector cached from a base64 answer is its float32 values, served in any encoding."""
    config = lane_config(sim, unique_spec("ok"), embed_cache=True)
    cache = SqliteCacheStore(tmp_path / "cache.sqlite3")
    async with Laneway.from_settings(config, environ={}, cache=cache) as lw:
        packed = await embed(lw, "base64")
        as_json = await embed(lw, "float")
        plain = await embed(lw, None)
        again = await embed(lw, "base64")
    assert [r.cache for r in (packed, as_json, plain, again)] == ["miss", "hit", "hit", "hit"]
    floats32 = [decoded(e) for e in packed.encoded]
    assert plain.vectors == floats32 == [decoded(e) for e in as_json.encoded]
    assert [e.text for e in again.encoded] == [e.text for e in packed.encoded]
    assert (plain.source, plain.usage.prompt_tokens) == ("cache", 0) and plain.cost == 0
