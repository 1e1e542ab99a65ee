"""``ScriptBatch``: concurrent script calls share pipelines, in call order, each with its answer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from laneway.state.batching import ScriptBatch
from laneway.state.redis_client import fast_failing_client

COUNT = "return redis.call('INCR', KEYS[1]) -- {}"
"""Counts its calls; the comment makes the script new to Redis (``NOSCRIPT`` first)."""


def counting(client: Redis):
    return client.register_script(COUNT.format(uuid.uuid4().hex))


@dataclass
class Counting:
    """A batch, a counting script and its key: ``count()`` is one call through the batch."""

    batch: ScriptBatch
    script: AsyncScript
    key: str

    def count(self) -> Awaitable[Any]:
        return self.batch.run(self.script, [self.key], [])


@pytest.fixture
def counter(redis_client, redis_prefix) -> Counting:
    return Counting(ScriptBatch(redis_client), counting(redis_client), f"{redis_prefix}:n")


async def test_concurrent_calls_answer_in_call_order_with_their_own_answers(
    counter: Counting,
) -> None:
    answers = await asyncio.gather(*(counter.count() for _ in range(20)))
    assert answers == list(range(1, 21))
    assert await counter.count() == 21


async def test_a_call_cancelled_before_its_pipeline_leaves_is_not_run(
    counter: Counting, redis_client
) -> None:
    await counter.count()
    kept = asyncio.ensure_future(counter.count())
    dropped = asyncio.ensure_future(counter.count())
    await asyncio.sleep(0)
    dropped.cancel()
    assert await kept == 2
    assert await redis_client.get(counter.key) == "2"


async def test_a_script_error_is_its_callers_alone(counter: Counting, redis_client) -> None:
    failing = redis_client.register_script("return redis.error_reply('refused')")
    await counter.count()
    answers: list[object] = await asyncio.gather(
        counter.count(), counter.batch.run(failing, [], []), return_exceptions=True
    )
    good, bad = answers
    assert good == 2
    assert isinstance(bad, ResponseError)


async def test_an_unreachable_redis_fails_every_waiting_call() -> None:
    client = fast_failing_client("redis://127.0.0.1:1/0", 0.5)
    batch = ScriptBatch(client)
    script = counting(client)
    try:
        answers = await asyncio.gather(
            *(batch.run(script, ["k"], []) for _ in range(3)), return_exceptions=True
        )
    finally:
        await client.aclose()
    assert all(isinstance(answer, RedisConnectionError) for answer in answers)
    with pytest.raises(RedisConnectionError):
        await batch.run(script, ["k"], [])
