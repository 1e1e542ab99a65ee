"""Guards at the gateway's edge: web pages, oversized embeddings, honest figures and wording."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import ServerConfig
from laneway.http import AiohttpTransport
from laneway.metrics import Metrics
from laneway.server.browsers import BrowserGuard, host_name
from laneway.server.protocol import CONNECTIONS
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, config, hits, post, serve_app, source

EMBED_SPEC = unique_spec("")
CHAT_SPEC = unique_spec("")


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes: dict[str, dict[str, Any]] = {
        "chat": {"sources": [source(sim, CHAT_SPEC)]},
        "embed": {
            "kind": "embed",
            "max_input_bytes": "1KiB",
            "max_answer_bytes": "64KiB",
            "sources": [source(sim, EMBED_SPEC)],
        },
    }
    settings = config(lanes, cors={"origins": ["https://app.example"]})
    metrics = Metrics()
    metrics.watch_connections(CONNECTIONS)
    engine = build_engine(settings, {}, transport=AiohttpTransport(), observers=[metrics])
    with serve_app(gateway_over(settings, engine, {}, metrics=metrics)) as running:
        yield running


async def chat(http, gw: RunningGateway, **headers: str):
    return await post(
        http, f"{gw.v1}/chat/completions", {"model": "chat", "messages": HELLO}, **headers
    )


async def test_a_foreign_origin_is_refused_before_any_upstream_call(gw, http, sim) -> None:
    """The issue's CSRF: a text/plain POST from a web page is refused, keys or not."""
    before = await hits(http, sim, CHAT_SPEC)
    status, _, answer = await chat(
        http, gw, Origin="https://evil.example", **{"Content-Type": "text/plain"}
    )
    assert status == 403 and answer["error"]["code"] == "origin_not_allowed"
    assert "server.cors.origins" in answer["error"]["message"]
    assert await hits(http, sim, CHAT_SPEC) == before
    assert (await chat(http, gw, Origin="null"))[0] == 403
    assert (await chat(http, gw, Origin="https://app.example"))[0] == 200


async def test_a_keyless_gateway_refuses_a_rebound_host(gw, http) -> None:
    """DNS rebinding: a domain re-pointed at 127.0.0.1 arrives with its own name as Host."""
    status, _, answer = await chat(http, gw, Host="attacker.example:4000")
    assert status == 403 and answer["error"]["code"] == "host_not_allowed"
    for host in ("127.0.0.1:4000", "localhost:4000", "[::1]:4000", "api.localhost"):
        assert (await chat(http, gw, Host=host))[0] == 200


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3:8080", True),
        ("[::1]:4000", True),
        ("LOCALHOST:1", True),
        ("gateway.internal", True),
        ("gateway.internal.attacker.example", False),
        ("attacker.example", False),
        ("127.0.0.1.nip.io", False),
    ],
)
def test_host_rule(host: str, allowed: bool) -> None:
    guard = BrowserGuard(ServerConfig(allowed_hosts=["gateway.internal"]), open_gateway=True)
    assert guard.host_allowed(host) is allowed


def test_host_name_drops_the_port() -> None:
    assert [host_name(h) for h in ("a:1", "[::1]:2", "::1", "a")] == ["a", "::1", "::1", "a"]


async def test_the_issues_embeddings_fan_out_is_a_413_without_upstream_calls(gw, http, sim) -> None:
    """200,000 one-character inputs once made 3,125 upstream calls; now none."""
    status, _, answer = await post(
        http, f"{gw.v1}/embeddings", {"model": "embed", "input": ["a"] * 200_000}
    )
    assert status == 413 and answer["error"]["code"] == "request_too_large"
    assert answer["error"]["param"] == "input" and "max_inputs" in answer["error"]["message"]
    assert await hits(http, sim, EMBED_SPEC) == 0


@pytest.mark.parametrize(
    ("body", "setting"),
    [
        ({"input": ["é" * 300, "é" * 300]}, "max_input_bytes"),
        ({"input": ["a"] * 10, "dimensions": 512}, "max_answer_bytes"),
    ],
)
async def test_embeddings_over_their_byte_bounds_are_413(gw, http, sim, body, setting) -> None:
    status, _, answer = await post(http, f"{gw.v1}/embeddings", {"model": "embed", **body})
    assert status == 413 and setting in answer["error"]["message"]
    assert await hits(http, sim, EMBED_SPEC) == 0


async def test_embeddings_within_bounds_are_answered(gw, http) -> None:
    body = {"model": "embed", "input": ["é" * 100, "b"], "dimensions": 16}
    status, _, answer = await post(http, f"{gw.v1}/embeddings", body)
    assert status == 200 and len(answer["data"]) == 2


async def test_metrics_count_answers_by_status(gw, http) -> None:
    await chat(http, gw, Origin="https://evil.example")
    await post(http, f"{gw.v1}/embeddings", {"model": "embed", "input": ["a"] * 3000})
    async with http.get(f"{gw.url}/nowhere") as response:
        assert response.status == 404
    async with http.get(f"{gw.url}/metrics") as response:
        text = await response.text()
    for status in (403, 413, 404):
        assert f'laneway_responses_total{{status="{status}"}}' in text
    assert "laneway_connections_open " in text and "laneway_connections_refused_total" in text


async def test_metrics_show_refused_keys(sim, http) -> None:
    """401s are counted too; a keyed gateway checks no Host (keys, not names, guard it)."""
    lanes = {"chat": {"sources": [source(sim, CHAT_SPEC)]}}
    settings = config(lanes, keys=[{"name": "ops", "key": "key-ops"}])
    metrics = Metrics()
    engine = build_engine(settings, {}, transport=AiohttpTransport(), observers=[metrics])
    with serve_app(gateway_over(settings, engine, {}, metrics=metrics)) as keyed:
        assert (await chat(http, keyed, Host="gateway.example.com"))[0] == 401
        ops = {"Authorization": "Bearer key-ops", "Host": "gateway.example.com"}
        assert (await chat(http, keyed, **ops))[0] == 200
        async with http.get(f"{keyed.url}/metrics", headers=ops) as response:
            text = await response.text()
    assert 'laneway_responses_total{status="401"} 1.0' in text
    assert 'laneway_responses_total{status="200"} 1.0' in text


async def test_head_answers_the_health_endpoints(gw, http) -> None:
    for path in ("/healthz", "/readyz"):
        async with http.head(f"{gw.url}{path}") as response:
            assert response.status == 200 and await response.read() == b""
    async with http.head(f"{gw.v1}/chat/completions") as response:
        assert response.status == 405


async def test_a_deadline_the_margin_used_up_is_said_so(gw, http) -> None:
    """A caller deadline at or below server.deadline_margin: no "deadline of -0ms"."""
    status, _, answer = await chat(http, gw, **{"X-Laneway-Deadline-Ms": "20"})
    message = answer["error"]["message"]
    assert status == 504 and "left no time" in message and "deadline_margin" in message
    assert "-0ms" not in message and "0ms" not in message


@pytest.mark.parametrize("n", [9223372036854775808, 129, 0])
async def test_an_n_above_what_any_provider_takes_is_a_400_naming_n(gw, http, sim, n) -> None:
    before = await hits(http, sim, CHAT_SPEC)
    body = b'{"model":"chat","messages":[{"role":"user","content":"hi"}],"n":%d}' % n
    status, _, answer = await post(http, f"{gw.v1}/chat/completions", body)
    assert status == 400 and answer["error"]["param"] == "n"
    assert "128" in answer["error"]["message"]
    assert await hits(http, sim, CHAT_SPEC) == before
