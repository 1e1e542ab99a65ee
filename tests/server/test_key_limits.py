"""Per-key limits and budgets on two replicas sharing one Redis (unique key prefix).

Every refusal is checked at the simulator too: a call refused by a key's
limits never reaches an upstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import aiohttp
import pytest

from laneway.app import build_engine
from laneway.app.gateway import gateway_over, key_limits
from laneway.clocks import SystemClock
from laneway.config.models import LanewayConfig
from laneway.http import AiohttpTransport
from laneway.policy.budget import periods
from laneway.sim import RunningSim
from laneway.state.keys.redis_ledger import RedisKeyLedger
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, hits, post, serve_app, source
from tests.state.conftest import REDIS_URL

PRICE = {"input": 0.0, "output": 2.0}
"""USD per million tokens: a call's estimate (prompt only) is 0, its real cost is not."""

KEYS = [
    {"name": "paced", "key": "k-paced", "rpm": 3},
    {"name": "single", "key": "k-single", "max_concurrency": 1},
    {"name": "budgeted", "key": "k-budget", "lanes": ["priced"], "budget": {"daily": 1e-9}},
    {"name": "tokens", "key": "k-tokens", "tpm": 100},
    {"name": "strict", "key": "k-strict", "lanes": ["unpriced"], "budget": {"monthly": 5}},
    {
        "name": "lenient",
        "key": "k-lenient",
        "lanes": ["unpriced"],
        "budget": {"monthly": 5},
        "allow_unpriced": True,
    },
]


@contextmanager
def replicas(
    settings: LanewayConfig, prefix: str, count: int = 2
) -> Iterator[list[RunningGateway]]:
    """``count`` gateways, each with its own engine and Redis ledger, sharing ``prefix``."""
    with ExitStack() as stack:
        running = []
        for _ in range(count):
            engine = build_engine(settings, {}, transport=AiohttpTransport())
            ledger = RedisKeyLedger.from_url(REDIS_URL, SystemClock(), prefix=prefix, timeout=5)
            limits = key_limits(settings, engine.clock, ledger=ledger)
            running.append(
                stack.enter_context(serve_app(gateway_over(settings, engine, {}, limits=limits)))
            )
        yield running


def settings(sim: RunningSim, specs: dict[str, str]) -> LanewayConfig:
    lanes: dict[str, Any] = {
        "open": {"sources": [source(sim, specs["open"], price=PRICE)]},
        "slow": {"sources": [source(sim, specs["slow"], price=PRICE)]},
        "priced": {"sources": [source(sim, specs["priced"], price=PRICE)]},
        "unpriced": {"sources": [source(sim, specs["unpriced"], model="no-such-model-x")]},
    }
    return LanewayConfig.model_validate({"lanes": lanes, "server": {"keys": KEYS}})


@pytest.fixture
def specs() -> dict[str, str]:
    return {
        "open": unique_spec(""),
        "slow": unique_spec("sleep=0.6"),
        "priced": unique_spec(""),
        "unpriced": unique_spec(""),
    }


async def chat(
    http: aiohttp.ClientSession, gw: RunningGateway, lane: str, key: str, **body: Any
) -> tuple[int, Any, Any]:
    payload = {"model": lane, "messages": HELLO, **body}
    return await post(http, f"{gw.v1}/chat/completions", payload, Authorization=f"Bearer {key}")


async def test_rpm_is_shared_by_replicas_and_refusals_never_reach_upstream(
    sim, http, redis_prefix, specs
) -> None:
    with replicas(settings(sim, specs), redis_prefix) as (a, b):
        answers = [await chat(http, (a, b)[i % 2], "open", "k-paced") for i in range(8)]
        statuses = [status for status, _, _ in answers]
        assert statuses.count(200) == 3 and statuses.count(429) == 5
        granted = [headers for status, headers, _ in answers if status == 200]
        remaining = [h["X-RateLimit-Remaining-Requests"] for h in granted]
        assert remaining == ["2", "1", "0"], "counted across both replicas"
        assert all(h["X-RateLimit-Limit-Requests"] == "3" for h in granted)
        assert all(
            0 < float(h["X-RateLimit-Reset-Requests"].removesuffix("s")) <= 60 for h in granted
        )
        assert "X-RateLimit-Limit-Tokens" not in granted[0], "the key has no tpm"
        _, headers, body = next(x for x in answers if x[0] == 429)
        assert body["error"]["code"] == "key_rpm_exceeded"
        assert body["error"]["type"] == "rate_limit_error"
        assert "'paced'" in body["error"]["message"] and "rpm" in body["error"]["message"]
        assert headers["X-RateLimit-Limit-Requests"] == "3"
        assert headers["X-RateLimit-Remaining-Requests"] == "0"
        assert 1 <= int(headers["Retry-After"]) <= 61
        assert await hits(http, sim, specs["open"]) == 3


async def at_the_upstream(http: aiohttp.ClientSession, sim: RunningSim, spec: str) -> None:
    """Return once the sim has received a request for ``spec``; fail after 5 s."""
    async with asyncio.timeout(5):
        while not await hits(http, sim, spec):  # noqa: ASYNC110 - polled over HTTP, no event
            await asyncio.sleep(0.005)


async def test_max_concurrency_holds_across_replicas(sim, http, redis_prefix, specs) -> None:
    """The second call goes once the first is at the upstream, its slot taken for 0.6 s."""
    with replicas(settings(sim, specs), redis_prefix) as (a, b):
        first = asyncio.ensure_future(chat(http, a, "slow", "k-single"))
        await at_the_upstream(http, sim, specs["slow"])
        status, headers, body = await chat(http, b, "slow", "k-single")
        assert status == 429 and body["error"]["code"] == "key_max_concurrency_exceeded"
        assert headers["X-RateLimit-Limit-Concurrency"] == "1"
        assert (await first)[0] == 200
        assert (await chat(http, b, "open", "k-single"))[0] == 200, "the slot was given back"
        assert await hits(http, sim, specs["slow"]) == 1
        assert await hits(http, sim, specs["open"]) == 1


async def test_budget_settles_with_the_real_cost_and_then_refuses(
    sim, http, redis_prefix, specs
) -> None:
    with replicas(settings(sim, specs), redis_prefix) as (a, b):
        status, _, body = await chat(http, a, "priced", "k-budget")
        assert status == 200
        cost = body["usage"]["completion_tokens"] * PRICE["output"] / 1e6
        status, headers, refused = await chat(http, b, "priced", "k-budget")
        assert status == 429 and refused["error"]["code"] == "key_daily_budget_exceeded"
        assert headers["X-RateLimit-Limit-Budget-Daily"] == "1e-09"
        assert await hits(http, sim, specs["priced"]) == 1
    reader = RedisKeyLedger.from_url(REDIS_URL, SystemClock(), prefix=redis_prefix)
    day, month = periods(SystemClock().wall())
    try:
        assert await reader.spent("budgeted", day) == pytest.approx(cost, rel=1e-6)
        assert await reader.spent("budgeted", month) == pytest.approx(cost, rel=1e-6)
    finally:
        await reader.aclose()


async def test_tpm_counts_the_real_tokens(sim, http, redis_prefix, specs) -> None:
    with replicas(settings(sim, specs), redis_prefix) as (a, b):
        ok = 0
        for i in range(40):
            status, _, body = await chat(http, (a, b)[i % 2], "open", "k-tokens")
            if status == 429:
                assert body["error"]["code"] == "key_tpm_exceeded"
                break
            ok += 1
        assert 1 <= ok < 40
        assert await hits(http, sim, specs["open"]) == ok


async def test_unpriced_lane_is_refused_to_a_budget_unless_allowed(
    sim, http, redis_prefix, specs
) -> None:
    with replicas(settings(sim, specs), redis_prefix, count=1) as (a,):
        status, _, body = await chat(http, a, "unpriced", "k-strict")
        assert status == 403 and body["error"]["code"] == "unpriced_lane"
        assert "allow_unpriced" in body["error"]["message"]
        assert await hits(http, sim, specs["unpriced"]) == 0
        assert (await chat(http, a, "unpriced", "k-lenient"))[0] == 200
        assert await hits(http, sim, specs["unpriced"]) == 1


async def test_answers_carry_the_token_window_too_streams_included(
    sim, http, redis_prefix, specs
) -> None:
    with replicas(settings(sim, specs), redis_prefix, count=1) as (a,):
        status, headers, body = await chat(http, a, "open", "k-tokens")
        assert status == 200
        assert headers["X-RateLimit-Limit-Tokens"] == "100"
        used = body["usage"]["prompt_tokens"]
        assert 0 <= int(headers["X-RateLimit-Remaining-Tokens"]) <= 100 - used
        payload = {"model": "open", "messages": HELLO, "stream": True}
        async with http.post(
            f"{a.v1}/chat/completions", json=payload, headers={"Authorization": "Bearer k-tokens"}
        ) as response:
            assert response.status == 200
            assert response.headers["X-RateLimit-Limit-Tokens"] == "100"
            assert "X-RateLimit-Reset-Tokens" in response.headers
            await response.read()
        status, headers, _ = await chat(http, a, "open", "k-single")
        assert status == 200 and not any(h.lower().startswith("x-ratelimit") for h in headers)
