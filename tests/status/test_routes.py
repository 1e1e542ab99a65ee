"""``GET /status`` and ``/status.json``: who may see them, and what the data says."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.http import AiohttpTransport
from laneway.server.status import refresh_seconds
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.asgi_driver import call
from tests.server.support import RunningGateway, config, source
from tests.status.support import chat, lane_of, serve_status, source_of, status_json

KEYS = [
    {"name": "ops", "key": "k-ops", "lanes": []},
    {"name": "all", "key": "k-all"},
    {"name": "some", "key": "k-some", "lanes": ["main"]},
]
OPS = {"Authorization": "Bearer k-ops"}


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes: dict[str, dict[str, Any]] = {
        "main": {
            "sources": [
                source(
                    sim,
                    unique_spec("sleep=0.02"),
                    name="primary",
                    rpm=100,
                    tpm=100_000,
                    concurrency={"max": 8},
                ),
                source(sim, unique_spec("status=500"), name="broken", priority=1),
            ],
        },
        "side": {"retries": 0, "sources": [source(sim, unique_spec("status=503"), name="down")]},
        "keyless": {"sources": [source(sim, unique_spec(""), api_key="${STATUS_TEST_UNSET}")]},
        "covered": {
            "fallback_lanes": ["main"],
            "sources": [source(sim, unique_spec(""), api_key="${STATUS_TEST_UNSET}")],
        },
    }
    with serve_status(config(lanes, keys=KEYS)) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def basic(key: str, user: str = "oncall") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{key}".encode()).decode()}


@pytest.mark.parametrize("path", ["/status", "/status.json"])
async def test_no_key_is_asked_for_one_in_a_browser_prompt(gw, http, path) -> None:
    async with http.get(f"{gw.url}{path}") as response:
        assert response.status == 401
        assert response.headers["www-authenticate"].startswith('Basic realm="laneway status"')
    async with http.get(f"{gw.url}{path}", headers=basic("wrong")) as response:
        assert response.status == 401


@pytest.mark.parametrize("headers", [OPS, {"Authorization": "Bearer k-all"}, basic("k-ops")])
async def test_scraping_keys_see_the_page_as_bearer_or_basic(gw, http, headers) -> None:
    async with http.get(f"{gw.url}/status", headers=headers) as response:
        assert response.status == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert response.headers["cache-control"] == "no-store"
        assert "default-src 'none'" in response.headers["content-security-policy"]
        page = await response.text()
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert "http://" not in page and "https://" not in page, "the page loads nothing"


@pytest.mark.parametrize(("query", "every", "meta"), [("", 5, 5), ("?refresh=0.5", 0.5, 1)])
async def test_the_page_refreshes_as_often_as_its_address_asks(gw, http, query, every, meta):
    async with http.get(f"{gw.url}/status{query}", headers=OPS) as response:
        page = await response.text()
    assert f"refreshed every {every:g} s" in page
    assert f"const every={round(every * 1000)};" in page
    assert f"<noscript><meta http-equiv=refresh content={meta}></noscript>" in page, "whole s"


@pytest.mark.parametrize(
    ("query", "seconds"),
    [
        (b"", 5),
        (b"refresh=2.5", 2.5),
        (b"lane=x&refresh=60", 60),
        (b"refresh=0.01", 0.25),
        (b"refresh=-3", 0.25),
        (b"refresh=1e9", 3600),
        (b"refresh=soon", 5),
        (b"refresh=nan", 5),
        (b"refresh=inf", 5),
    ],
)
def test_the_refresh_asked_for_is_held_within_bounds(query, seconds) -> None:
    assert refresh_seconds(query) == seconds


async def test_a_key_limited_to_some_lanes_is_refused(gw, http) -> None:
    for path in ("/status", "/status.json"):
        async with http.get(f"{gw.url}{path}", headers=basic("k-some")) as response:
            assert response.status == 403
            assert "every lane" in (await response.json())["error"]["message"]


async def test_the_data_has_every_lane_and_source_worst_first(gw, http) -> None:
    for _ in range(3):
        assert await chat(http, gw, "main", headers={"Authorization": "Bearer k-all"}) == 200
        await chat(http, gw, "side", headers={"Authorization": "Bearer k-all"})
    data = await status_json(http, gw, OPS)
    assert [lane["verdict"] for lane in data["lanes"]] == ["down", "down", "warn", "ok"]
    assert {lane["name"] for lane in data["lanes"][:2]} == {"side", "keyless"}
    covered = lane_of(data, "covered")
    assert covered["serves_via"] == "main" and covered["fallback_lanes"] == ["main"]
    assert covered["reasons"][0].endswith("its calls go to fallback lane main")
    keyless = lane_of(data, "keyless")
    assert not keyless["ready"] and "STATUS_TEST_UNSET is unset" in keyless["reasons"][0]
    main = lane_of(data, "main")
    assert main["now"]["requests"] == 3 and main["now"]["errors"] == 0
    assert main["hour"]["requests"] == 3 and sum(main["points"]["requests"]) == 3
    primary = source_of(data, "main", "primary")
    assert primary["verdict"] == "ok" and primary["breaker"] == "closed"
    assert primary["quota"] == {
        "rpm": 100,
        "tpm": 100_000,
        "requests": 3,
        "tokens": primary["quota"]["tokens"],
        "group": None,
    }
    assert primary["quota"]["tokens"] > 0
    assert primary["concurrency"] == {"limit": 8, "in_flight": 0, "min": 1, "max": 8}
    assert primary["now"]["requests"] == 3 and primary["now"]["completion_tokens"] > 0
    assert primary["hour"]["cost_usd"] > 0
    assert 0.01 < primary["now"]["latency_p50"] < 5
    broken = source_of(data, "main", "broken")
    assert broken["now"]["requests"] == 0, "never needed"
    assert broken["health"] is None and broken["tier"] == "untried", "was 100% credible"
    assert primary["tier"] == "credible" and primary["health"] == 1.0
    side = lane_of(data, "side")
    assert side["now"]["errors"] == 3 and side["now"]["errors_by_code"] == {"upstream_error": 3}
    down = source_of(data, "side", "down")
    assert down["now"]["errors"] == 3 and down["now"]["errors_by_code"] == {"503": 3}
    assert down["tier"] != "credible" and down["last_failure"].startswith("failed ")
    assert data["worker"]["history"] == "this process"


async def test_streams_report_time_to_first_token(gw, http) -> None:
    assert (
        await chat(http, gw, "main", stream=True, headers=OPS | {"Authorization": "Bearer k-all"})
        == 200
    )
    primary = source_of(await status_json(http, gw, OPS), "main", "primary")
    assert primary["now"]["ttft_p50"] is not None


async def test_a_gateway_without_metrics_has_no_status_page(sim: RunningSim) -> None:
    lanes = {"l": {"sources": [source(sim, unique_spec(""))]}}
    settings = config(lanes)
    engine = build_engine(settings, {}, transport=AiohttpTransport())
    gateway = gateway_over(
        settings, engine, {}
    )  # called in-process: what it routes needs no socket
    try:
        assert gateway.status is None
        assert "/status" not in gateway.router.routes
        for path in ("/status", "/status.json"):
            assert (await call(gateway, "GET", path)).status == 404
    finally:
        await engine.aclose()


async def test_metrics_gauge_each_sources_breaker_and_health(gw, http) -> None:
    """Failed before: /metrics had no breaker-state or source-health gauge (issue 23, defect 16)."""
    for _ in range(3):
        await chat(http, gw, "side", headers={"Authorization": "Bearer k-all"})
    assert await chat(http, gw, "main", headers={"Authorization": "Bearer k-all"}) == 200
    async with http.get(f"{gw.url}/metrics", headers=OPS) as response:
        assert response.status == 200
        text = await response.text()
    gauges = {
        line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
        for line in text.splitlines()
        if line.startswith(("laneway_breaker_state{", "laneway_source_health{"))
    }
    states = {"closed": 0.0, "half-open": 1.0, "open": 2.0}
    down = source_of(await status_json(http, gw, OPS), "side", "down")
    assert gauges['laneway_breaker_state{lane="main",source="primary"}'] == 0.0
    assert gauges['laneway_source_health{lane="main",source="primary"}'] == 1.0
    assert gauges['laneway_breaker_state{lane="side",source="down"}'] == states[down["breaker"]]
    assert gauges['laneway_source_health{lane="side",source="down"}'] < 0.5
    assert 'laneway_breaker_state{lane="main",source="broken"}' in gauges
    assert 'laneway_source_health{lane="main",source="broken"}' not in gauges, "untried"
