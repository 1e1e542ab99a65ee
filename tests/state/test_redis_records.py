"""Redis answers only the outcomes a store lacks, and the records stay those of the whole log.

Two stores on one prefix stand for two replicas: each logs outcomes the
other must see, at most ``LOG_SIZE`` of them, in order, whatever the gap.
"""

from __future__ import annotations

from laneway.core.clock import FakeClock
from laneway.state import RedisStore
from laneway.state.admission.base import LOG_SIZE, Ask
from laneway.state.admission.redis_store import RECORDS_FRESH_FOR
from tests.state.conftest import delete_keys

LANE = "lane"


def pair(redis_client, prefix: str) -> tuple[RedisStore, RedisStore, FakeClock]:
    clock = FakeClock()
    return (
        RedisStore(redis_client, clock, prefix=prefix),
        RedisStore(redis_client, clock, prefix=prefix),
        clock,
    )


async def log(store: RedisStore, clock: FakeClock, codes: str, ticket: str = "t") -> None:
    for n, code in enumerate(codes.split()):
        clock.advance(0.5)
        await store.settle(LANE, Ask("a", f"{ticket}{n}"), None, code)


async def codes_seen(store: RedisStore) -> list[str]:
    admission = await store.admit(LANE, ["a"], [Ask("a", "look")])
    return [mark.code for mark in admission.records["a"].marks]


async def test_a_replica_sees_the_outcomes_another_logged_in_order(
    redis_client, redis_prefix
) -> None:
    one, two, clock = pair(redis_client, redis_prefix)
    assert await codes_seen(two) == []
    await log(one, clock, "ok failed")
    assert await codes_seen(two) == ["ok", "failed"]
    await log(one, clock, "timeout")
    await log(two, clock, "ok")
    assert await codes_seen(two) == ["ok", "failed", "timeout", "ok"]
    assert await codes_seen(one) == ["ok", "failed", "timeout", "ok"]


async def test_a_gap_wider_than_the_log_brings_the_newest_outcomes_whole(
    redis_client, redis_prefix
) -> None:
    one, two, clock = pair(redis_client, redis_prefix)
    await log(one, clock, "ok")
    assert await codes_seen(two) == ["ok"]
    await log(one, clock, " ".join(["failed"] * LOG_SIZE + ["timeout"]))
    assert await codes_seen(two) == ["failed"] * (LOG_SIZE - 1) + ["timeout"]


async def test_a_record_that_did_not_change_is_the_same_object(redis_client, redis_prefix) -> None:
    store, _, clock = pair(redis_client, redis_prefix)
    await log(store, clock, "ok failed")
    first = (await store.admit(LANE, ["a"], [Ask("a", "x")])).records["a"]
    again = (await store.admit(LANE, ["a"], [Ask("a", "y")])).records["a"]
    assert again is first
    assert first.last_ok is not None


async def test_a_log_gone_from_redis_starts_again_empty(redis_client, redis_prefix) -> None:
    store, _, clock = pair(redis_client, redis_prefix)
    await log(store, clock, "ok failed")
    await delete_keys(redis_client, f"{redis_prefix}:*")
    clock.advance(1.0)
    assert await codes_seen(store) == []
    await log(store, clock, "timeout")
    assert await codes_seen(store) == ["timeout"]


async def test_an_admission_that_reserves_nothing_uses_records_read_a_moment_ago(
    redis_client, redis_prefix
) -> None:
    one, two, clock = pair(redis_client, redis_prefix)
    assert await codes_seen(two) == []
    await one.settle(LANE, Ask("a", "t"), None, "failed")
    clock.advance(RECORDS_FRESH_FOR)
    assert await codes_seen(two) == []
    clock.advance(0.001)
    assert await codes_seen(two) == ["failed"]


async def test_quotas_and_probes_are_always_decided_in_redis(redis_client, redis_prefix) -> None:
    one, two, _ = pair(redis_client, redis_prefix)
    assert await codes_seen(one) == []
    assert (await one.admit(LANE, ["a"], [Ask("a", "t1", rpm=1)])).granted is not None
    assert (await two.admit(LANE, ["a"], [Ask("a", "t2", rpm=1)])).granted is None
    assert (await one.admit(LANE, ["a"], [Ask("a", "t3", probe=5.0)])).granted is not None
    assert (await two.admit(LANE, ["a"], [Ask("a", "t4", probe=5.0)])).granted is None
