"""When Redis is down or silent, laneway serves on local state, says so once, and
replays that state into Redis when it returns."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from laneway.core.clock import FakeClock
from laneway.state import FallbackStore, MemoryStore, RedisStore
from laneway.state.admission.base import Ask
from tests.proxy import TcpProxy
from tests.state.conftest import REDIS_URL

LANE = "lane"


def fallback(url: str, clock: FakeClock, prefix: str = "laneway") -> FallbackStore:
    shared = RedisStore.from_url(url, clock, prefix=prefix, timeout=0.3)
    return FallbackStore(shared, MemoryStore(clock), clock, timeout=0.3, retry_every=1.0)


def warnings_about(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in record.getMessage() for record in caplog.records)


async def test_unreachable_redis_serves_locally_and_says_so_once(caplog) -> None:
    clock = FakeClock()
    store = fallback("redis://127.0.0.1:1/0", clock)
    with caplog.at_level(logging.WARNING, logger="laneway.state"):
        granted = []
        for n in range(3):
            answer = await store.admit(LANE, ["a"], [Ask("a", f"t{n}", rpm=2)])
            granted.append(answer.granted is not None)
            clock.advance(1.5)
    await store.aclose()
    assert granted == [True, True, False], "the local window still holds the quota"
    assert store.degraded and store.outages == 1
    assert warnings_about(caplog, "unreachable") == 1


async def test_a_silent_redis_costs_one_timeout_per_retry_interval() -> None:
    held: list[asyncio.StreamWriter] = []

    async def accept_and_say_nothing(_: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        held.append(w)

    server = await asyncio.start_server(accept_and_say_nothing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    clock = FakeClock()
    store = fallback(f"redis://127.0.0.1:{port}/0", clock)
    started = time.monotonic()
    first = await store.admit(LANE, ["a"], [Ask("a", "t1")])
    timed_out = time.monotonic() - started
    second = await store.admit(LANE, ["a"], [Ask("a", "t2")])
    after = time.monotonic() - started - timed_out
    await store.aclose()
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()
    assert first.granted and second.granted
    assert 0.3 <= timed_out < 1.5
    assert after < 0.1, "within the retry interval, local state answers at once"


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    target = urlsplit(REDIS_URL)
    relay = TcpProxy((target.hostname or "127.0.0.1", target.port or 6379))
    await relay.start()
    yield relay
    await relay.stop()


async def test_local_state_is_replayed_when_redis_returns(
    proxy, redis_client, redis_prefix, caplog
) -> None:
    clock = FakeClock()
    store = fallback(f"redis://127.0.0.1:{proxy.port}/0", clock, redis_prefix)
    with caplog.at_level(logging.WARNING, logger="laneway.state"):
        assert (await store.admit(LANE, ["a"], [Ask("a", "t1", rpm=3)])).granted
        assert not store.degraded
        await proxy.stop()
        local = Ask("a", "t2", rpm=3)
        assert (await store.admit(LANE, ["a"], [local])).granted
        await store.settle(LANE, local, None, "failed")
        assert store.degraded
        await proxy.start()
        clock.advance(1.0)
        third = await store.admit(LANE, ["a"], [Ask("a", "t3", rpm=3)])
        fourth = await store.admit(LANE, ["a"], [Ask("a", "t4", rpm=3)])
    await store.aclose()
    assert not store.degraded and store.outages == 1
    assert third.granted and not fourth.granted, "t2, granted locally, now counts in Redis"
    assert [m.code for m in third.records["a"].marks] == ["failed"]
    assert warnings_about(caplog, "unreachable") == 1
    assert warnings_about(caplog, "is back") == 1
    assert await redis_client.exists(f"{redis_prefix}:{{{LANE}}}:a:q")


async def test_only_a_source_with_a_quota_keeps_a_local_window_of_its_redis_grants(
    redis_prefix,
) -> None:
    clock = FakeClock()
    store = fallback(REDIS_URL, clock, redis_prefix)
    for source, rpm in (("free", None), ("quota", 100)):
        ask = Ask(source, f"t-{source}", tokens=5, rpm=rpm)
        admitted = await store.admit(LANE, [source], [ask])
        assert admitted.granted == ask
        await store.settle(LANE, ask, 7, "ok")
    await store.aclose()
    assert not store.degraded
    windows = {dump.source: [e.tokens for e in dump.entries] for dump in store.local.dump()}
    assert windows.get("free", []) == [], "a source without a quota has no window to mirror"
    assert windows["quota"] == [7], "a quota's window mirrors the grant, settled at its tokens"
