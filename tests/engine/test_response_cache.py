"""The chat response cache: exact-match hits, misses, bypasses; errors and empties never kept."""

from __future__ import annotations

from typing import Any

import pytest

from laneway import Laneway
from laneway.cache import RedisCacheStore, SqliteCacheStore
from laneway.core.records import CallRecord
from laneway.errors import UpstreamFailed
from tests.cache.conftest import WallClock, fresh_redis_store
from tests.engine.spy import sim_hits
from tests.helpers import one_lane, unique_spec

HELLO = [{"role": "user", "content": "hello"}]


class Collect:
    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


async def test_temperature_zero_is_cached_when_declared_and_hits_are_recorded(sim) -> None:
    spec, sink = unique_spec("ok"), Collect()
    config = one_lane(sim, spec, cache={"ttl": "1h", "when": "temperature0"})
    async with Laneway.from_settings(config, environ={}, observers=[sink]) as lw:
        miss = await lw.chat("lane", HELLO, temperature=0)
        hit = await lw.chat("lane", HELLO, temperature=0)
    assert (miss.cache, hit.cache) == ("miss", "hit")
    assert (hit.content, hit.usage, hit.source, hit.model) == (
        miss.content,
        miss.usage,
        miss.source,
        miss.model,
    )
    assert hit.attempts == () and await sim_hits(sim, spec) == 1
    first, second = sink.records
    assert (first.cache, second.cache) == ("miss", "hit")
    assert second.outcome == "ok" and second.attempts == () and second.usage == miss.usage
    assert second.provider == "openai"


async def test_other_requests_bypass_a_temperature0_cache(sim) -> None:
    spec = unique_spec("ok")
    config = one_lane(sim, spec, cache={"ttl": "1h", "when": "temperature0"})
    async with Laneway.from_settings(config, environ={}) as lw:
        answers = [await lw.chat("lane", HELLO) for _ in range(2)]
        answers += [await lw.chat("lane", HELLO, temperature=0.7) for _ in range(2)]
    assert [a.cache for a in answers] == ["bypass"] * 4
    assert await sim_hits(sim, spec) == 4


@pytest.mark.parametrize(
    ("cache", "expected"),
    [({"ttl": "1h"}, ["miss", "hit"]), (False, ["bypass"] * 2), (None, ["bypass"] * 2)],
)
async def test_only_a_lane_that_declares_a_cache_caches(
    sim, cache: dict[str, str] | bool | None, expected: list[str]
) -> None:
    fields: dict[str, Any] = {} if cache is None else {"cache": cache}
    config = one_lane(sim, unique_spec("ok"), **fields)
    async with Laneway.from_settings(config, environ={}) as lw:
        answers = [await lw.chat("lane", HELLO, temperature=0) for _ in range(2)]
    assert [a.cache for a in answers] == expected


async def test_a_caller_can_skip_or_refresh_the_cache(sim) -> None:
    spec = unique_spec("ok")
    config = one_lane(sim, spec, cache={"ttl": "1h"})
    async with Laneway.from_settings(config, environ={}) as lw:
        answers = [
            await lw.chat("lane", HELLO, cache_control="no-store"),
            await lw.chat("lane", HELLO),
            await lw.chat("lane", HELLO, cache_control="no-cache"),
            await lw.chat("lane", HELLO),
            await lw.chat("lane", HELLO, cache_control="no-store"),
        ]
    assert [a.cache for a in answers] == ["bypass", "miss", "refresh", "hit", "bypass"]
    assert await sim_hits(sim, spec) == 4


async def test_the_key_is_exact_over_messages_and_params_but_not_their_order(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), cache={"ttl": "1h"})
    other = [{"role": "user", "content": "hello!"}]
    calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = [
        (HELLO, {"top_p": 1, "max_tokens": 5}),
        (HELLO, {"max_tokens": 5, "top_p": 1}),
        (HELLO, {"max_tokens": 6, "top_p": 1}),
        (other, {"max_tokens": 5, "top_p": 1}),
    ]
    async with Laneway.from_settings(config, environ={}) as lw:
        answers = [await lw.chat("lane", messages, **params) for messages, params in calls]
    assert [a.cache for a in answers] == ["miss", "hit", "miss", "miss"]


async def test_errors_are_never_cached(sim) -> None:
    spec = unique_spec("fail_first=1")
    config = one_lane(sim, spec, cache={"ttl": "1h"})
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamFailed):
            await lw.chat("lane", HELLO)
        answers = [await lw.chat("lane", HELLO) for _ in range(2)]
    assert [a.cache for a in answers] == ["miss", "hit"]
    assert await sim_hits(sim, spec) == 2


async def test_empty_completions_are_never_cached(sim) -> None:
    spec = unique_spec("empty")
    config = one_lane(sim, spec, cache={"ttl": "1h"})
    async with Laneway.from_settings(config, environ={}) as lw:
        answers = [await lw.chat("lane", HELLO) for _ in range(2)]
    assert [(a.cache, a.content) for a in answers] == [("miss", "")] * 2
    assert await sim_hits(sim, spec) == 2


async def test_entries_expire_after_the_lane_ttl(sim) -> None:
    wall = WallClock()
    config = one_lane(sim, unique_spec("ok"), cache={"ttl": "10s"})
    store = SqliteCacheStore(":memory:", wall=wall)
    async with Laneway.from_settings(config, environ={}, cache=store) as lw:
        first = await lw.chat("lane", HELLO)
        wall.now += 9
        second = await lw.chat("lane", HELLO)
        wall.now += 2
        third = await lw.chat("lane", HELLO)
    assert [a.cache for a in (first, second, third)] == ["miss", "hit", "miss"]


async def test_an_unreachable_cache_costs_nothing_but_the_hit(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), cache={"ttl": "1h"})
    store = RedisCacheStore.from_url("redis://127.0.0.1:1/0", timeout=0.2)
    async with Laneway.from_settings(config, environ={}, cache=store) as lw:
        answers = [await lw.chat("lane", HELLO) for _ in range(2)]
    assert [a.content for a in answers] == ["sim answer w2 w3 w4"] * 2
    assert [a.cache for a in answers] == ["miss", "miss"]


@pytest.mark.integration
async def test_replicas_share_hits_through_redis(sim) -> None:
    spec = unique_spec("ok")
    config = one_lane(sim, spec, cache={"ttl": "1h"})
    async with fresh_redis_store() as store:
        replicas = [Laneway.from_settings(config, environ={}, cache=store) for _ in range(2)]
        first = await replicas[0].chat("lane", HELLO)
        second = await replicas[1].chat("lane", HELLO)
        for replica in replicas:
            await replica.aclose()
    assert (first.cache, second.cache) == ("miss", "hit")
    assert await sim_hits(sim, spec) == 1
