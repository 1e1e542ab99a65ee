"""One contract for every cache backend: values, absences, overwrites, expiry, scale."""

from __future__ import annotations

import asyncio
import logging

import pytest

from laneway.cache import CacheStore, CacheUnavailable, GuardedCache, SqliteCacheStore
from laneway.cache.sqlite import KEYS_PER_QUERY
from laneway.core.clock import FakeClock
from tests.cache.conftest import WallClock


async def test_values_come_back_in_key_order(store: CacheStore) -> None:
    await store.put_many({"a": b"1", "b": b"\x00\xff"}, None)
    assert await store.get_many(["b", "missing", "a"]) == [b"\x00\xff", None, b"1"]
    assert await store.get_many([]) == []


async def test_a_put_overwrites(store: CacheStore) -> None:
    await store.put_many({"k": b"old"}, None)
    await store.put_many({"k": b"new"}, None)
    assert await store.get_many(["k"]) == [b"new"]


async def test_more_keys_than_one_query_takes(store: CacheStore) -> None:
    items = {f"k{i}": str(i).encode() for i in range(KEYS_PER_QUERY * 2 + 7)}
    await store.put_many(items, None)
    assert await store.get_many(list(items)) == list(items.values())


@pytest.mark.integration
async def test_redis_entries_expire(redis_store: CacheStore) -> None:
    """Gone within 0.2 s of a 50 ms expiry; asked every 10 ms, not only at the end."""
    await redis_store.put_many({"short": b"x"}, 0.05)
    await redis_store.put_many({"long": b"y"}, 60)
    for _ in range(20):
        if await redis_store.get_many(["short"]) == [None]:
            break
        await asyncio.sleep(0.01)
    assert await redis_store.get_many(["short", "long"]) == [None, b"y"]


async def test_sqlite_entries_expire_and_are_purged(tmp_path) -> None:
    wall = WallClock()
    store = SqliteCacheStore(tmp_path / "c.sqlite3", wall=wall)
    await store.put_many({"short": b"x", "keep": b"k"}, 10)
    await store.put_many({"forever": b"f"}, None)
    wall.now += 11
    assert await store.get_many(["short", "keep", "forever"]) == [None, None, b"f"]
    await store.put_many({"next": b"n"}, 10)
    rows = await store._run(lambda db: db.execute("SELECT key FROM laneway_cache").fetchall())
    assert sorted(key for (key,) in rows) == ["forever", "next"]
    await store.aclose()


async def test_sqlite_file_is_shared_and_survives_reopening(tmp_path) -> None:
    path = tmp_path / "shared.sqlite3"
    first, second = SqliteCacheStore(path), SqliteCacheStore(path)
    await first.put_many({"k": b"v"}, None)
    assert await second.get_many(["k"]) == [b"v"]
    await first.aclose()
    await second.aclose()
    reopened = SqliteCacheStore(path)
    assert await reopened.get_many(["k"]) == [b"v"]
    await reopened.aclose()


async def test_sqlite_failure_is_cache_unavailable(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = SqliteCacheStore(blocker / "c.sqlite3")
    with pytest.raises(CacheUnavailable, match="SQLite cache"):
        await store.get_many(["k"])
    await store.aclose()


async def test_unreachable_redis_is_cache_unavailable() -> None:
    from laneway.cache import RedisCacheStore

    store = RedisCacheStore.from_url("redis://127.0.0.1:1/0", timeout=0.2)
    with pytest.raises(CacheUnavailable, match="Redis cache"):
        await store.get_many(["k"])
    with pytest.raises(CacheUnavailable):
        await store.put_many({"k": b"v"}, 1)
    await store.aclose()


class Broken:
    """A backend that always fails, and counts how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    async def get_many(self, keys):
        self.calls += 1
        raise CacheUnavailable("down")

    async def put_many(self, items, ttl):
        self.calls += 1
        raise CacheUnavailable("down")

    async def aclose(self) -> None:
        pass


async def test_guard_reads_failures_as_misses_and_rests_the_backend(caplog) -> None:
    clock, broken = FakeClock(), Broken()
    guard = GuardedCache(broken, clock, retry_every=5.0)
    with caplog.at_level(logging.WARNING, logger="laneway.cache"):
        assert await guard.get_many(["a", "b"]) == [None, None]
        await guard.put_many({"a": b"1"}, None)
        assert await guard.get_many(["a"]) == [None]
    assert broken.calls == 1 and guard.resting
    assert [r.message for r in caplog.records] == ["cache unavailable, serving without it: down"]
    clock.advance(5.0)
    await guard.put_many({"a": b"1"}, None)
    assert broken.calls == 2 and guard.failures == 2


class Slow(Broken):
    async def get_many(self, keys):
        await asyncio.sleep(10)
        return [None] * len(keys)


async def test_guard_bounds_a_slow_backend() -> None:
    guard = GuardedCache(Slow(), FakeClock(), timeout=0.05)
    async with asyncio.timeout(2):
        assert await guard.get_many(["a"]) == [None]
    assert guard.failures == 1


async def test_guard_recovers_when_the_backend_answers_again() -> None:
    clock = FakeClock()
    backend = SqliteCacheStore(":memory:")
    guard = GuardedCache(backend, clock)
    guard._failed(CacheUnavailable("blip"))
    assert guard.resting
    clock.advance(guard.retry_every)
    await guard.put_many({"k": b"v"}, None)
    assert await guard.get_many(["k"]) == [b"v"] and not guard.resting
    await guard.aclose()
