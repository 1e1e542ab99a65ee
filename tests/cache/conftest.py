"""Every cache backend behind one fixture; Redis is the real one on loopback.

Redis tests use a key prefix of their own and delete their keys afterwards.
When Redis is unreachable they skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from laneway.cache import CacheStore, RedisCacheStore, SqliteCacheStore

REDIS_URL = os.environ.get("LANEWAY_TEST_REDIS", "redis://127.0.0.1:6379/0")


class WallClock:
    """Unix time that moves only when told to (for expiry)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


async def redis_client() -> Redis:
    """A client of the loopback Redis; skips (fails under CI=true) when it does not answer."""
    client = Redis.from_url(REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        await client.aclose()
        message = f"Redis unreachable at {REDIS_URL}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return client


@asynccontextmanager
async def fresh_redis_store() -> AsyncIterator[RedisCacheStore]:
    """A Redis store under a prefix of its own, emptied afterwards."""
    client = await redis_client()
    prefix = f"lw-test-{uuid.uuid4().hex[:12]}:"
    try:
        yield RedisCacheStore(client, prefix=prefix)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


@pytest.fixture
async def redis_store() -> AsyncIterator[RedisCacheStore]:
    """A Redis store of this test's own."""
    async with fresh_redis_store() as store:
        yield store


@pytest.fixture(
    params=["sqlite-memory", "sqlite-file", pytest.param("redis", marks=pytest.mark.integration)]
)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CacheStore]:
    """Each backend in turn, closed afterwards."""
    if request.param == "redis":
        async with fresh_redis_store() as redis:
            yield redis
        return
    path = ":memory:" if request.param == "sqlite-memory" else tmp_path / "cache" / "c.sqlite3"
    sqlite = SqliteCacheStore(path)
    yield sqlite
    await sqlite.aclose()
