"""Redis on loopback for the state tests: a unique key prefix per test, cleaned up after.

When Redis is unreachable the tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

REDIS_URL = os.environ.get("LANEWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
async def redis_client() -> AsyncIterator[Redis]:
    """A client of the test Redis, or a skip (a failure in CI) when it is down."""
    client = Redis.from_url(REDIS_URL, decode_responses=True, socket_timeout=5)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        await client.aclose()
        message = f"Redis at {REDIS_URL} is unreachable: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    yield client
    await client.aclose()


@pytest.fixture
async def redis_prefix(redis_client: Redis) -> AsyncIterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    prefix = f"lwtest-{uuid.uuid4().hex[:12]}"
    yield prefix
    await delete_keys(redis_client, f"{prefix}:*")


async def delete_keys(client: Redis, pattern: str) -> None:
    """Delete every key matching ``pattern``."""
    keys = [key async for key in client.scan_iter(match=pattern)]
    if keys:
        await client.delete(*keys)
