"""A key's rpm and daily budget through a Redis outage, two gateways, counted at the simulator.

Each gateway has its own engine and key ledger; both reach one Redis through a relay
the test cuts (the shared Redis is never touched). The ledgers run on one virtual
clock, so the key's minute and UTC day move only when the test says so. A refused
call must make no upstream request, during the outage as before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import aiohttp

from laneway.app import build_engine
from laneway.app.gateway import gateway_over, key_limits
from laneway.config.models import LanewayConfig
from laneway.core.clock import FakeClock
from laneway.http import AiohttpTransport
from laneway.metrics import Metrics
from laneway.policy.budget import periods
from laneway.sim import RunningSim
from laneway.state.keys.fallback import FallbackKeyLedger
from laneway.state.keys.redis_ledger import RedisKeyLedger
from tests.helpers import unique_spec
from tests.proxy import TcpProxy
from tests.server.support import RunningGateway, hits, post, serve_app, source
from tests.state.test_fallback import proxy

__all__ = ["proxy"]

NOON = datetime(2026, 6, 10, 12, 0, tzinfo=UTC).timestamp()
PRICE = {"input": 10.0, "output": 0.0}
"""USD per million tokens: the prompt alone is priced, so estimates are near real costs."""
PROMPT = [{"role": "user", "content": "x" * 400}]
"""101 prompt tokens at the simulator (laneway estimates 100): $0.00101 a call."""
CALL_USD = Decimal("0.00101")


@contextmanager
def replicas(settings: LanewayConfig, url: str, clock: FakeClock, prefix: str) -> Iterator[Any]:
    """Two gateways whose key ledgers reach Redis at ``url`` (the relay), with metrics."""
    with ExitStack() as stack:
        running = []
        for _ in range(2):
            engine = build_engine(settings, {}, transport=AiohttpTransport())
            shared = RedisKeyLedger.from_url(url, clock, prefix=prefix, timeout=2.0)
            ledger = FallbackKeyLedger(shared, clock, timeout=2.0, retry_every=1.0)
            limits = key_limits(settings, engine.clock, ledger=ledger)
            gateway = gateway_over(settings, engine, {}, metrics=Metrics(), limits=limits)
            running.append(stack.enter_context(serve_app(gateway)))
        yield running


async def chat(http: aiohttp.ClientSession, gw: RunningGateway) -> tuple[int, Any]:
    payload = {"model": "priced", "messages": PROMPT}
    status, _, body = await post(
        http, f"{gw.v1}/chat/completions", payload, Authorization="Bearer k-team"
    )
    return status, body


async def test_a_keys_rpm_and_budget_hold_through_a_redis_outage_and_spend_is_replayed(
    sim: RunningSim, http, proxy: TcpProxy, redis_client, redis_prefix
) -> None:
    spec = unique_spec("")
    key = {"name": "team", "key": "k-team", "rpm": 6, "budget": {"daily": 0.006565}}
    url = f"redis://127.0.0.1:{proxy.port}/0"
    settings = LanewayConfig.model_validate(
        {
            "lanes": {"priced": {"sources": [source(sim, spec, price=PRICE)]}},
            "server": {"keys": [key]},
        }
    )
    clock = FakeClock(wall_start=NOON)
    with replicas(settings, url, clock, redis_prefix) as (a, b):
        first = [await chat(http, a), await chat(http, b)]
        clock.advance(5.0)  # the next heartbeat: a sees b too
        first.append(await chat(http, a))
        await proxy.stop()
        outage = [await chat(http, gw) for gw in (a, b, a, b, a, b)]
        await proxy.start()
        clock.advance(1.0)
        back = [await chat(http, a), await chat(http, b)]
        clock.advance(61.0)  # a new minute: only the budget can refuse now
        late = await chat(http, a)
        assert a.gateway.metrics is not None
        scraped = a.gateway.metrics.render()[0].decode()
    answered = [body for status, body in first + outage + back if status == 200]
    assert [status for status, _ in first] == [200, 200, 200]
    # rpm 6, a share of 3 each: a had used 2 of its 3, b 1 of its 3.
    assert [status for status, _ in outage] == [200, 200, 429, 200, 429, 429]
    assert [status for status, _ in back] == [429, 429], "the minute is spent: 6 calls"
    assert await hits(http, sim, spec) == len(answered) == 6, "refused calls reach no upstream"
    codes = {body["error"]["code"] for status, body in outage + back if status != 200}
    assert codes <= {"key_rpm_exceeded", "key_daily_budget_exceeded"}
    priced = sum(Decimal(body["usage"]["prompt_tokens"]) for body in answered) * Decimal("1e-5")
    assert priced == 6 * CALL_USD
    day, _ = periods(NOON)
    spent = Decimal(await redis_client.get(f"{redis_prefix}:key:{{team}}:spend:{day}"))
    assert spent == priced, "every priced call of both replicas, the outage's replayed once"
    status, body = late
    assert status == 429 and body["error"]["code"] == "key_daily_budget_exceeded"
    assert "laneway_key_ledger_outages_total 1.0" in scraped
    assert "laneway_key_ledger_replayed_total 1.0" in scraped, "a granted one call alone"
    assert "laneway_key_ledger_backend_up 1.0" in scraped
