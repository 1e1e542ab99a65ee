"""The status page in a real headless Chromium: layout, refresh, and a breaker opening.

Screenshots are kept in ``tests/artifacts/status/`` (gitignored; each test
prints its path). Every wait is a poll with a generous bound: Chromium can
take many seconds to start on a loaded two-core machine.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from laneway.core.records import CallRecord
from laneway.core.types import Attempt, Usage
from laneway.metrics import Metrics
from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.server.support import HELLO, RunningGateway, config, source
from tests.status.browser import WIDTH, Browser, chromium, poll
from tests.status.support import chat, priced_metrics, serve_status, source_of, status_json

KEY = "k-oncall"
OPS = {"Authorization": f"Bearer {KEY}"}
FLAP = 2.0
"""Half-period of the flapping source: up and down by turns for this many seconds."""
BREAKER = {"failures": 3, "window": "60s", "cooldown": "300s"}
"""Three failures open it, and it stays open for the rest of the test."""


@pytest.fixture(scope="module")
def flap_spec() -> str:
    return unique_spec(f"flap={FLAP:g}")


@pytest.fixture(scope="module")
def gw(sim: RunningSim, flap_spec: str) -> Iterator[RunningGateway]:
    lanes: dict[str, dict[str, Any]] = {
        "chat": {
            "sources": [
                source(
                    sim, unique_spec("sleep=0.03"), name="primary", rpm=600, concurrency={"max": 16}
                ),
                source(sim, unique_spec("ttfb=0.05"), name="fallback", priority=1, tpm=200_000),
            ]
        },
        "flappy": {
            "retries": 0,
            "breaker": BREAKER,
            "sources": [source(sim, flap_spec, name="flapping")],
        },
        "embed": {"kind": "embed", "sources": [source(sim, unique_spec(""), name="vectors")]},
    }
    settings = config(
        lanes, keys=[{"name": "oncall", "key": KEY, "lanes": []}, {"name": "app", "key": "k-app"}]
    )
    with serve_status(settings, metrics=with_past_hour(priced_metrics())) as running:
        yield running


def with_past_hour(metrics: Metrics) -> Metrics:
    """``metrics`` with an hour of made-up calls on lane ``chat``, so the plots have a shape."""
    now = time.time()
    for minute in range(60, 0, -1):
        for n in range(5 + (minute * 7) % 13):
            failed = n == 0 and minute % 9 == 0
            latency = 0.2 + 0.05 * ((minute * 3 + n) % 11) + (1.5 if minute in (20, 21) else 0)
            metrics.observe(
                CallRecord(
                    time=now - minute * 60 + n,
                    lane="chat",
                    kind="chat",
                    outcome="error" if failed else "ok",
                    latency=latency,
                    attempts=(Attempt("primary", "503" if failed else "ok", latency),),
                    source=None if failed else "primary",
                    error="upstream_error" if failed else None,
                    usage=Usage(40, 120, 160, source="provider"),
                    ttfb=latency / 3,
                    stream=True,
                )
            )
    return metrics


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as opened:
        await opened.authorize(KEY)
        yield opened


async def test_every_lane_and_source_with_plots_and_no_overflow(gw, http, browser) -> None:
    for _ in range(4):
        assert (
            await chat(http, gw, "chat", stream=True, headers={"Authorization": "Bearer k-app"})
            == 200
        )
    await browser.goto(f"{gw.url}/status")
    lanes = await browser.evaluate(
        "[...document.querySelectorAll('tbody[data-lane]')].map(t => t.dataset.lane)"
    )
    assert sorted(lanes) == ["chat", "embed", "flappy"]
    sources = await browser.evaluate(
        "[...document.querySelectorAll('tr.source')].map(r => r.dataset.name)"
    )
    assert sorted(sources) == ["fallback", "flapping", "primary", "vectors"]
    rows = await browser.evaluate("document.querySelectorAll('tbody tr').length")
    assert await browser.evaluate("document.querySelectorAll('svg.spark.traffic').length") == rows
    assert await browser.evaluate("document.querySelectorAll('svg.spark.latency').length") == rows
    bars = "document.querySelectorAll('tbody[data-lane=chat] tr.lane svg.traffic rect').length"
    assert await browser.evaluate(bars) >= 50, "an hour of per-minute bars"
    assert (
        await browser.evaluate(
            "document.querySelectorAll('tbody[data-lane=chat] tr.lane svg.latency polyline').length"
        )
        >= 1
    )
    assert await browser.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert await browser.evaluate("window.innerWidth") == WIDTH
    widest = await browser.evaluate(
        "Math.max(...[...document.querySelectorAll('td, th, svg')]"
        ".map(e => e.getBoundingClientRect().right))"
    )
    assert widest <= WIDTH
    await browser.screenshot("layout")


async def test_the_page_refreshes_itself_and_keeps_its_scroll(gw, http, browser) -> None:
    await browser.send(
        "Emulation.setDeviceMetricsOverride",
        width=WIDTH,
        height=300,
        deviceScaleFactor=1,
        mobile=False,
    )
    await browser.goto(f"{gw.url}/status")
    cell = (
        "document.querySelector('tbody[data-lane=embed] tr.lane td:nth-child(7)')"
        ".firstChild.textContent"
    )
    before = int(await browser.evaluate(cell))
    await browser.evaluate("window.loadedOnce = true; window.scrollTo(0, 120); window.scrollY")
    scrolled = await browser.evaluate("window.scrollY")
    assert scrolled > 0
    async with http.post(
        f"{gw.v1}/embeddings",
        json={"model": "embed", "input": ["a", "b"]},
        headers={"Authorization": "Bearer k-app"},
    ) as response:
        assert response.status == 200
    await browser.wait_for(f"+({cell}) === {before + 1}", timeout=60)
    assert await browser.evaluate("window.loadedOnce === true"), "refreshed in place, not reloaded"
    assert await browser.evaluate("+document.body.dataset.refreshes") >= 1
    assert await browser.evaluate("window.scrollY") == scrolled


async def test_a_lane_going_from_healthy_to_an_open_breaker(
    sim: RunningSim, gw, http, browser, flap_spec: str
) -> None:
    app = {"Authorization": "Bearer k-app"}
    successes = 0
    deadline = time.monotonic() + 60
    while successes < 3:
        assert time.monotonic() < deadline, "no three successes in a row"
        if successes == 0:
            await until_upstream(http, sim, flap_spec, 200)
        successes = successes + 1 if await chat(http, gw, "flappy", headers=app) == 200 else 0
    await browser.goto(f"{gw.url}/status")
    row = "document.querySelector('tbody[data-lane=flappy] tr.source')"
    assert await browser.evaluate(f"{row}.className") != "source down"
    assert await browser.evaluate(f"{row}.querySelector('td:nth-child(4)').textContent") == "closed"
    await browser.screenshot("breaker-healthy")

    async def opened() -> bool:
        flapping = source_of(await status_json(http, gw, OPS), "flappy", "flapping")
        if flapping["breaker"] == "open":
            return True
        await until_upstream(http, sim, flap_spec, 503)
        await chat(http, gw, "flappy", headers=app)
        return False

    await poll(opened, 60, "the breaker opens")
    await browser.wait_for(f"{row}.className === 'source down'", timeout=60)
    breaker = await browser.evaluate(f"{row}.querySelector('td:nth-child(4)').textContent")
    assert breaker.startswith("open") and "probe in" in breaker
    lane = "document.querySelector('tbody[data-lane=flappy]')"
    assert await browser.evaluate(f"{lane}.className") == "down"
    first = await browser.evaluate("document.querySelector('tbody[data-lane]').dataset.lane")
    assert first == "flappy", "the lane that is down comes first"
    await browser.screenshot("breaker-open")


async def until_upstream(
    http: aiohttp.ClientSession, sim: RunningSim, spec: str, status: int
) -> None:
    """Wait until the flapping upstream answers ``status`` when asked directly."""

    async def answers() -> bool:
        url = f"{sim_url(sim, spec)}/chat/completions"
        async with http.post(url, json={"model": "m", "messages": HELLO}) as response:
            await response.read()
            return response.status == status

    await poll(answers, 4 * FLAP + 30, f"the upstream answers {status}")
