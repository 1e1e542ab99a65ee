"""``ScriptBatch``: concurrent script calls share pipelines, in call order, each with its answer."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from laneway.state.batching import ScriptBatch
from laneway.state.redis_store import fast_failing_client

COUNT = "return redis.call('INCR', KEYS[1]) -- {}"
"""Counts its calls; the comment makes the script new to Redis (``NOSCRIPT`` first)."""


def counting(client: Redis):
    return client.register_script(COUNT.format(uuid.uuid4().hex))


async def test_concurrent_calls_answer_in_call_order_with_their_own_answers(
    redis_client, redis_prefix
) -> None:
    batch = ScriptBatch(redis_client)
    script = counting(redis_client)
    key = f"{redis_prefix}:n"
    answers = await asyncio.gather(*(batch.run(script, [key], []) for _ in range(20)))
    assert answers == list(range(1, 21))
    assert await batch.run(script, [key], []) == 21


async def test_a_call_cancelled_before_its_pipeline_leaves_is_not_run(
    redis_client, redis_prefix
) -> None:
    batch = ScriptBatch(redis_client)
    script = counting(redis_client)
    key = f"{redis_prefix}:n"
    await batch.run(script, [key], [])
    kept = asyncio.ensure_future(batch.run(script, [key], []))
    dropped = asyncio.ensure_future(batch.run(script, [key], []))
    await asyncio.sleep(0)
    dropped.cancel()
    assert await kept == 2
    assert await redis_client.get(key) == "2"


async def test_a_script_error_is_its_callers_alone(redis_client, redis_prefix) -> None:
    batch = ScriptBatch(redis_client)
    failing = redis_client.register_script("return redis.error_reply('refused')")
    script = counting(redis_client)
    key = f"{redis_prefix}:n"
    await batch.run(script, [key], [])
    answers: list[object] = await asyncio.gather(
        batch.run(script, [key], []), batch.run(failing, [], []), return_exceptions=True
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
