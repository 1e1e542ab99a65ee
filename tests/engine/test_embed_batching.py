"""Embedding batches: split, bounded, reassembled in order, size-capped, summed, cached."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from pydantic import ValidationError

from laneway import Laneway
from laneway.app.policies import lane_settings
from laneway.cache import SqliteCacheStore
from laneway.config.models import LanewayConfig
from laneway.core.errors import AttemptFailure
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.core.types import Usage
from laneway.core.usage import NOTHING_SENT, sum_usage
from laneway.engine.embedding import batch_size, split
from laneway.engine.embedding_cache import decode_vector, encode_vector
from laneway.errors import DimensionMismatch, ResponseTooLarge, UpstreamFailed
from laneway.http import AiohttpTransport, MockTransport
from tests.cache.conftest import fresh_redis_store
from tests.engine.spy import SpyTransport, sim_hits
from tests.helpers import one_lane, unique_spec

TEXTS = [f"chunk number {i}" for i in range(10)]


def mock_lane(**lane: Any) -> LanewayConfig:
    source = {"base_url": "http://mock/v1", "model": "m"}
    return LanewayConfig.model_validate(
        {"lanes": {"lane": {"kind": "embed", "sources": [source], **lane}}}
    )


def embed_answer(request: HttpRequest, dims: int = 4, usage: bool = True) -> HttpResponse:
    inputs = orjson.loads(request.body)["input"]
    data = [{"index": i, "embedding": [float(len(t))] * dims} for i, t in enumerate(inputs)]
    payload: dict[str, Any] = {"data": data, "model": "m"}
    if usage:
        payload["usage"] = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
    return HttpResponse(200, {}, orjson.dumps(payload))


async def test_ten_inputs_in_batches_of_three_are_four_calls_in_input_order(sim) -> None:
    spec = unique_spec("ok")
    spy = SpyTransport()
    config = one_lane(sim, spec, kind="embed", dimensions=8, max_batch_items=3)
    async with Laneway.from_settings(config, environ={}, transport=spy) as lw:
        batched = await lw.embed("lane", TEXTS)
    whole_config = one_lane(sim, unique_spec("ok"), kind="embed", dimensions=8)
    async with Laneway.from_settings(whole_config, environ={}) as lw:
        whole = await lw.embed("lane", TEXTS)
    assert await sim_hits(sim, spec) == 4
    assert [len(body["input"]) for body in spy.bodies] == [3, 3, 3, 1]
    assert batched.vectors == whole.vectors
    assert len(batched.attempts) == 4 and batched.cache == "bypass"


async def test_usage_is_the_sum_of_the_batches(sim) -> None:
    spy = SpyTransport()
    config = one_lane(sim, unique_spec("ok"), kind="embed", max_batch_items=4)
    async with Laneway.from_settings(config, environ={}, transport=spy) as lw:
        response = await lw.embed("lane", TEXTS)
    # the sim counts a token per four characters of a batch, plus one
    per_batch = [sum(len(t) for t in body["input"]) // 4 + 1 for body in spy.bodies]
    assert len(per_batch) == 3
    assert response.usage.prompt_tokens == sum(per_batch)
    assert response.usage.source == "provider"


async def test_one_batch_without_usage_makes_the_total_unknown() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        return embed_answer(request, usage="chunk number 9" not in request.body.decode())

    config = mock_lane(max_batch_items=3)
    async with Laneway.from_settings(config, environ={}, transport=MockTransport(handler)) as lw:
        response = await lw.embed("lane", TEXTS)
    assert response.usage == Usage()
    assert response.usage.prompt_tokens is None


def test_usage_sums_field_by_field_and_never_turns_unknown_into_zero() -> None:
    a = Usage(3, None, 3, source="provider")
    b = Usage(4, None, 4, source="estimated")
    assert sum_usage([a, b]) == Usage(7, None, 7, source="estimated")
    assert sum_usage([a, Usage()]) == Usage()
    assert sum_usage([]) == NOTHING_SENT


async def test_the_response_budget_shrinks_batches_at_the_pinned_length(sim) -> None:
    spec = unique_spec("ok")
    config = one_lane(
        sim, spec, kind="embed", dimensions=64, max_batch_items=64, max_response_bytes="4KiB"
    )
    assert batch_size(lane_settings(config.lanes["lane"]), 64) == 2
    async with Laneway.from_settings(config, environ={}) as lw:
        response = await lw.embed("lane", TEXTS[:5])
    assert await sim_hits(sim, spec) == 3
    assert [len(v) for v in response.vectors] == [64] * 5


async def test_an_oversize_answer_is_an_error_naming_the_limit(sim) -> None:
    spec = unique_spec("dims=256")
    config = one_lane(
        sim,
        spec,
        kind="embed",
        max_response_bytes="2KiB",
        retries=2,
        retry_on=[503, "cut"],
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(ResponseTooLarge, match=r"max_response_bytes \(2048 bytes\)") as err:
            await lw.embed("lane", TEXTS[:3])
    assert err.value.limit == 2048 and err.value.code == "response_too_large"
    assert [a.outcome for a in err.value.attempts] == ["too_large"]
    assert await sim_hits(sim, spec) == 1


async def test_a_chunked_answer_is_cut_as_soon_as_it_passes_the_limit() -> None:
    sent: list[int] = []

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(200):
            await response.write(b"x" * 1024)
            sent.append(1)
            await asyncio.sleep(0.001)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/e", endless)
    async with TestServer(app) as server:
        transport = AiohttpTransport()
        request = HttpRequest("POST", str(server.make_url("/e")), max_bytes=4096)
        with pytest.raises(AttemptFailure, match="response limit of 4096 bytes") as err:
            await transport.send(request)
        await transport.aclose()
    assert err.value.kind == "too_large"
    assert len(sent) < 200


async def test_batches_run_at_most_batch_concurrency_at_a_time() -> None:
    running, peak = 0, 0

    async def handler(request: HttpRequest) -> HttpResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return embed_answer(request)

    config = mock_lane(max_batch_items=1, batch_concurrency=3)
    async with Laneway.from_settings(config, environ={}, transport=MockTransport(handler)) as lw:
        response = await lw.embed("lane", TEXTS[:8])
    assert peak == 3
    assert [v[0] for v in response.vectors] == [float(len(t)) for t in TEXTS[:8]]


async def test_a_failed_batch_fails_the_call_and_cancels_the_others() -> None:
    finished: list[str] = []

    async def handler(request: HttpRequest) -> HttpResponse:
        if b"chunk number 0" in request.body:
            return HttpResponse(503, {}, b'{"error": {"message": "down"}}')
        await asyncio.sleep(1.0)
        finished.append("late")
        return embed_answer(request)

    config = mock_lane(max_batch_items=2)
    async with Laneway.from_settings(config, environ={}, transport=MockTransport(handler)) as lw:
        async with asyncio.timeout(0.5):
            with pytest.raises(UpstreamFailed, match="503"):
                await lw.embed("lane", TEXTS[:6])
    assert finished == []


async def test_vectors_of_different_lengths_in_one_answer_are_refused() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        return embed_answer(request, dims=5 if b"chunk number 0" in request.body else 4)

    config = mock_lane(max_batch_items=1)
    async with Laneway.from_settings(config, environ={}, transport=MockTransport(handler)) as lw:
        with pytest.raises(DimensionMismatch, match=r"different lengths \[4, 5\]"):
            await lw.embed("lane", TEXTS[:2])


async def test_the_item_cache_sends_only_changed_inputs(sim, tmp_path: Path) -> None:
    spec = unique_spec("ok")
    config = one_lane(sim, spec, kind="embed", dimensions=8, embed_cache=True)
    path = tmp_path / "cache.sqlite3"

    async def run(texts: list[str]) -> tuple[Any, SpyTransport]:
        spy = SpyTransport()
        cache = SqliteCacheStore(path)
        async with Laneway.from_settings(config, environ={}, transport=spy, cache=cache) as lw:
            return await lw.embed("lane", texts), spy

    first, spy = await run(TEXTS)
    assert [len(b["input"]) for b in spy.bodies] == [10] and first.cache == "miss"
    changed = [*TEXTS[:4], "a new chunk", *TEXTS[5:]]
    second, spy = await run(changed)
    assert [b["input"] for b in spy.bodies] == [["a new chunk"]]
    assert second.vectors[:4] == first.vectors[:4] and second.vectors[5:] == first.vectors[5:]
    assert second.vectors[4] != first.vectors[4]
    assert second.usage.prompt_tokens == len("a new chunk") // 4 + 1
    third, spy = await run(changed)
    assert spy.requests == [] and third.vectors == second.vectors
    assert (third.cache, third.source, third.usage.prompt_tokens) == ("hit", "cache", 0)
    assert await sim_hits(sim, spec) == 2


@pytest.mark.integration
async def test_the_item_cache_on_redis(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), kind="embed", dimensions=8, embed_cache=True)
    async with fresh_redis_store() as store:
        lw = Laneway.from_settings(config, environ={}, cache=store)
        first = await lw.embed("lane", TEXTS[:3])
        second = await lw.embed("lane", TEXTS[:3])
        await lw.aclose()
    assert (first.cache, second.cache) == ("miss", "hit")
    assert second.vectors == first.vectors


def test_vectors_round_trip_exactly_and_wrong_lengths_are_misses() -> None:
    vector = [0.1, -2.5e-7, 1 / 3]
    assert decode_vector(encode_vector(vector), 3) == vector
    assert decode_vector(encode_vector(vector), 4) is None
    assert decode_vector(b"\x00" * 7, None) is None


def test_split_keeps_order() -> None:
    assert split([0, 2, 5, 7, 9], 2) == [[0, 2], [5, 7], [9]]


def test_batch_fields_belong_to_embed_lanes() -> None:
    with pytest.raises(ValidationError, match="max_batch_items applies to embed lanes only"):
        source = {"base_url": "http://x", "model": "m"}
        LanewayConfig.model_validate({"lanes": {"c": {"max_batch_items": 8, "sources": [source]}}})
