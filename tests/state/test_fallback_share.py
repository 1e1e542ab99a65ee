"""While Redis is down each replica spends only its share of a quota, counting what it
already spent, so together the replicas stay within the limit; the outage is on /metrics.

The issue measured an rpm-600 source serving 1,043 requests in one minute with one
replica and 1,202 with two, because the local fallback started from an empty window
with the whole limit. Here two replicas share rpm 600 through a Redis proxy that is
cut mid-minute, and both keep asking far past the limit.
"""

from __future__ import annotations

import logging

from laneway.core.clock import FakeClock
from laneway.metrics import Metrics
from laneway.state import FallbackStore, MemoryStore, RedisStore
from laneway.state.admission.base import Ask
from tests.proxy import TcpProxy
from tests.state.conftest import delete_keys
from tests.state.test_fallback import proxy, warnings_about

__all__ = ["proxy"]

LANE = "lane"
RPM = 600


def replica(url: str, clock: FakeClock, prefix: str, share: float | None = None) -> FallbackStore:
    """A replica whose Redis operations get 2 s (a loaded machine must not fake an outage)."""
    shared = RedisStore.from_url(url, clock, prefix=prefix, timeout=2.0)
    local = MemoryStore(clock)
    return FallbackStore(shared, local, clock, timeout=2.0, retry_every=1.0, fallback_share=share)


class Asker:
    """Numbered asks of one replica on source ``a`` of rpm ``RPM``; counts grants."""

    def __init__(self, store: FallbackStore, name: str) -> None:
        self.store = store
        self.name = name
        self.asked = 0
        self.granted = 0

    async def ask(self, times: int) -> int:
        granted = 0
        for _ in range(times):
            self.asked += 1
            ask = Ask("a", f"{self.name}{self.asked}", rpm=RPM)
            answer = await self.store.admit(LANE, ["a"], [ask])
            if answer.granted is not None:
                await self.store.settle(LANE, ask, None, "ok")
                granted += 1
        self.granted += granted
        return granted


async def test_two_replicas_hold_an_rpm_quota_through_a_redis_outage(
    proxy: TcpProxy, redis_client, redis_prefix, caplog
) -> None:
    clock = FakeClock()
    url = f"redis://127.0.0.1:{proxy.port}/0"
    a = Asker(replica(url, clock, redis_prefix), "a")
    b = Asker(replica(url, clock, redis_prefix), "b")
    with caplog.at_level(logging.WARNING, logger="laneway.state"):
        await a.ask(1)
        await b.ask(1)
        clock.advance(5.0)  # the next heartbeat: each has seen both
        before = await a.ask(199) + await b.ask(99)
        await proxy.stop()
        during = await a.ask(400) + await b.ask(400)
        assert a.store.degraded and b.store.degraded
        outage_metrics = Metrics()
        outage_metrics.watch_state(a.store)
        scraped = outage_metrics.render()[0].decode()
        await proxy.start()
        clock.advance(1.0)
        after = await a.ask(10) + await b.ask(10)
    for store in (a.store, b.store):
        await store.aclose()
    assert before == 298 and a.store.replicas == 2 == b.store.replicas
    assert a.granted + b.granted == RPM, "the minute's total is the limit, never more"
    assert (a.granted, b.granted) == (300, 300), "each spent its half, counting the minute so far"
    assert during == RPM - before - 2 and after == 0
    assert await redis_client.zcard(f"{redis_prefix}:{{{LANE}}}:a:q") == RPM, "replayed once"
    assert "laneway_state_backend_up 0.0" in scraped
    assert "laneway_state_outages_total 1.0" in scraped
    assert "laneway_state_local_admissions_total 100.0" in scraped
    assert warnings_about(caplog, "each quota at 50% (2 replica(s) last seen)") == 2
    assert warnings_about(caplog, "is back") == 2


async def test_a_configured_share_applies_when_no_replica_count_is_known() -> None:
    clock = FakeClock()
    store = replica("redis://127.0.0.1:1/0", clock, "lw-unused", share=0.25)
    answers = [await store.admit(LANE, ["s"], [Ask("s", f"s{n}", rpm=8)]) for n in range(5)]
    await store.aclose()
    assert [a.granted is not None for a in answers] == [True, True, False, False, False]
    metrics = Metrics()
    metrics.watch_state(store)
    scraped = metrics.render()[0].decode()
    assert "laneway_state_backend_up 0.0" in scraped and "laneway_state_replicas" not in scraped


async def test_redis_back_empty_does_not_give_the_first_replica_back_the_whole_quota(
    proxy: TcpProxy, redis_client, redis_prefix
) -> None:
    """The issue's 615 in a minute: Redis restarted empty mid-minute, and the first replica
    back, seeing only its own heartbeat, took the whole limit. Here the outage is the proxy
    cut, and the restart's empty Redis is this test's keys deleted while it is cut."""
    clock = FakeClock()
    url = f"redis://127.0.0.1:{proxy.port}/0"
    a = Asker(replica(url, clock, redis_prefix), "a")
    b = Asker(replica(url, clock, redis_prefix), "b")
    await a.ask(1)
    await b.ask(1)
    clock.advance(5.0)  # the next heartbeat: each has seen both
    await a.ask(99)
    await b.ask(99)
    await proxy.stop()
    await a.ask(100)
    await b.ask(100)
    await delete_keys(redis_client, f"{redis_prefix}:*")
    await proxy.start()
    clock.advance(5.0)  # still the same minute
    await a.ask(RPM)  # a is back first: it alone has beaten in the emptied Redis
    await b.ask(RPM)
    for store in (a.store, b.store):
        await store.aclose()
    assert a.granted + b.granted <= RPM, (a.granted, b.granted)  # before: (600, 200)
    assert a.store.replicas == 2, "the count does not drop before the others could beat again"
