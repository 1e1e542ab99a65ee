"""The status page in a real headless Chromium: layout, refresh, and a breaker opening.

Screenshots are kept in ``tests/artifacts/status/`` (gitignored; each test
prints its path). Every wait is a poll with a generous bound: Chromium can
take many seconds to start on a loaded two-core machine. One Chromium and one
gateway serve the module; each test has a page of its own. Pages whose test
waits for a refresh ask for one every ``REFRESH`` seconds (``?refresh=``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from laneway.core.records import CallRecord
from laneway.core.types import Attempt, Usage
from laneway.metrics import Metrics
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import RunningGateway, config, source
from tests.status.browser import WIDTH, Browser, chromium, poll
from tests.status.support import chat, priced_metrics, serve_status, source_of, status_json

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "k-oncall"
OPS = {"Authorization": f"Bearer {KEY}"}
HEALTHY = 3
"""Calls the flapping source answers before it goes down for good (``fail_after``)."""
BREAKER = {"failures": 3, "window": "60s", "cooldown": "300s"}
"""Three failures open it, and it stays open for the rest of the test."""
REFRESH = 0.25
"""Seconds between refreshes of the pages whose test waits for one (the fastest allowed)."""


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
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
            "sources": [source(sim, unique_spec(f"fail_after={HEALTHY}"), name="flapping")],
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


@pytest_asyncio.fixture(loop_scope="module")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium_for_module() -> AsyncIterator[Browser]:
    async with chromium() as started:
        yield started


@pytest_asyncio.fixture(loop_scope="module")
async def browser(chromium_for_module: Browser) -> AsyncIterator[Browser]:
    """A fresh page of the module's Chromium, sending the on-call key."""
    async with chromium_for_module.page() as page:
        await page.authorize(KEY)
        yield page


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
    await browser.goto(f"{gw.url}/status?refresh={REFRESH:g}")
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


async def test_a_lane_going_from_healthy_to_an_open_breaker(gw, http, browser) -> None:
    app = {"Authorization": "Bearer k-app"}
    for _ in range(HEALTHY):
        assert await chat(http, gw, "flappy", headers=app) == 200
    await browser.goto(f"{gw.url}/status?refresh={REFRESH:g}")
    row = "document.querySelector('tbody[data-lane=flappy] tr.source')"
    assert await browser.evaluate(f"{row}.className") != "source down"
    assert await browser.evaluate(f"{row}.querySelector('td:nth-child(4)').textContent") == "closed"
    await browser.screenshot("breaker-healthy")

    async def opened() -> bool:
        flapping = source_of(await status_json(http, gw, OPS), "flappy", "flapping")
        if flapping["breaker"] == "open":
            return True
        assert await chat(http, gw, "flappy", headers=app) != 200, "the source is down"
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
