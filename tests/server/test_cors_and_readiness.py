"""Browser clients of a listed origin get CORS; /readyz honours server.ready."""

from __future__ import annotations

from collections.abc import Iterator

import aiohttp
import orjson
import pytest

from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, config, post, serve_gateway, source

APP = "https://app.example"


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes = {"chat": {"sources": [source(sim, unique_spec("ok"))]}}
    with serve_gateway(config(lanes, cors={"origins": [APP]})) as running:
        yield running


async def test_a_listed_origins_preflight_is_answered(gw, http: aiohttp.ClientSession) -> None:
    headers = {"Origin": APP, "Access-Control-Request-Method": "POST"}
    async with http.options(f"{gw.v1}/chat/completions", headers=headers) as response:
        assert response.status == 204
        assert response.headers["access-control-allow-origin"] == APP
        assert response.headers["access-control-allow-methods"] == "POST, OPTIONS"
        assert "authorization" in response.headers["access-control-allow-headers"]
        assert response.headers["vary"] == "Origin"


async def test_a_listed_origins_answers_carry_cors(gw, http: aiohttp.ClientSession) -> None:
    body = {"model": "chat", "messages": HELLO}
    status, headers, _ = await post(http, f"{gw.v1}/chat/completions", body, Origin=APP)
    assert status == 200 and headers["access-control-allow-origin"] == APP
    assert "x-laneway-cache" in headers["access-control-expose-headers"]
    status, headers, _ = await post(http, f"{gw.v1}/chat/completions", body)
    assert status == 200 and "access-control-allow-origin" not in headers


async def test_a_foreign_preflight_is_refused_and_options_says_allow(
    gw, http: aiohttp.ClientSession
) -> None:
    headers = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    async with http.options(f"{gw.v1}/chat/completions", headers=headers) as response:
        assert response.status == 403
        assert "access-control-allow-origin" not in response.headers
    async with http.options(f"{gw.url}/healthz") as response:
        assert response.status == 204 and response.headers["allow"] == "GET, HEAD, OPTIONS"
    async with http.options(f"{gw.url}/nowhere") as response:
        assert response.status == 404


@pytest.mark.parametrize(("need", "status"), [("all", 503), ("any", 200)])
async def test_readyz_needs_every_lane_or_any(
    sim: RunningSim, http: aiohttp.ClientSession, need: str, status: int
) -> None:
    keyless = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "os.environ/NOPE"}
    lanes = {"up": {"sources": [source(sim, "ok")]}, "down": {"sources": [keyless]}}
    with serve_gateway(config(lanes, ready=need)) as running:
        async with http.get(f"{running.url}/readyz") as response:
            assert response.status == status
            body = orjson.loads(await response.read())
    assert body["need"] == need and body["ready"] is (status == 200)
    assert body["lanes"]["down"]["problems"] == [
        "source openai:m: environment variable NOPE is unset"
    ]
    assert body["lanes"]["up"]["ready"] is True
