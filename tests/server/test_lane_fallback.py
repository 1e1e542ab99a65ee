"""``fallback_lanes`` through the gateway: streams on every chat endpoint, and lanes that are
not ready, end to end against the simulator (hits counted there, not timed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from laneway.clocks import SystemClock
from laneway.policy.budget import periods
from laneway.sim import RunningSim
from laneway.sim._answers import answer_pieces
from laneway.state.keys.memory import MemoryKeyLedger
from tests.helpers import unique_spec
from tests.server.logged_serve import AUTH, UNSET, LoggedServe
from tests.server.support import (
    HELLO,
    Records,
    config,
    hits,
    post,
    serve_gateway,
    source,
    wait_until,
)
from tests.server.test_access_log import post as post_sync

WORDS = 30
FULL_ANSWER = "".join(answer_pieces(WORDS))


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def lanes(primary: dict[str, Any], rescue: dict[str, Any], **settings: Any) -> dict[str, Any]:
    """``primary`` (falling back to ``rescue``) and ``rescue``, each of one source."""
    return {
        "primary": {"sources": [primary], "fallback_lanes": ["rescue"], **settings},
        "rescue": {"sources": [rescue]},
    }


def unready(sim: RunningSim, spec: str) -> dict[str, Any]:
    """A source whose key variable is unset."""
    return source(sim, spec, api_key=f"os.environ/{UNSET}", name="keyed")


async def stream_text(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any]
) -> tuple[int, dict[str, str], str, list[Any]]:
    """POST a streamed call: status, headers, the text deltas joined, and every data payload."""
    async with http.post(url, json=body) as response:
        raw = await response.read()
        headers = dict(response.headers)
    payloads = [
        "[DONE]" if line == b"data: [DONE]" else orjson.loads(line.removeprefix(b"data: "))
        for line in raw.splitlines()
        if line.startswith(b"data: ")
    ]
    return response.status, headers, "".join(_delta(p) for p in payloads), payloads


def _delta(payload: Any) -> str:
    """The text a chunk adds, in any of the three wire formats."""
    if not isinstance(payload, dict):
        return ""
    if payload.get("choices"):
        return str(payload["choices"][0]["delta"].get("content") or "")
    if payload.get("type") == "content_block_delta":
        return str(payload["delta"].get("text") or "")
    if payload.get("type") == "response.output_text.delta":
        return str(payload["delta"])
    return ""


ENDPOINTS = [
    ("chat/completions", {"messages": HELLO, "stream": True}),
    ("messages", {"messages": HELLO, "stream": True, "max_tokens": 256}),
    ("responses", {"input": "hello", "stream": True}),
]


@pytest.mark.parametrize(("path", "body"), ENDPOINTS, ids=[p for p, _ in ENDPOINTS])
async def test_a_stream_failing_before_its_first_token_is_answered_by_the_next_lane(
    sim: RunningSim, http: aiohttp.ClientSession, path: str, body: dict[str, Any]
) -> None:
    down, ok = unique_spec("status=503"), unique_spec(f"chunks={WORDS}")
    records = Records()
    settings = config(lanes(source(sim, down), source(sim, ok)))
    with serve_gateway(settings, observers=[records]) as gw:
        status, headers, text, _ = await stream_text(
            http, f"{gw.v1}/{path}", {"model": "primary", **body}
        )
    assert status == 200 and text == FULL_ANSWER
    assert headers["x-laneway-lane"] == "rescue" and headers["x-laneway-attempts"] == "2"
    assert [(r.lane, r.outcome, r.stream) for r in records.records] == [
        ("primary", "error", True),
        ("rescue", "ok", True),
    ]
    assert (await hits(http, sim, down), await hits(http, sim, ok)) == (1, 1)


async def test_a_stream_cut_under_restart_is_resumed_by_the_next_lane(
    sim: RunningSim, http: aiohttp.ClientSession
) -> None:
    cut, ok = unique_spec(f"chunks={WORDS},cut_after=10"), unique_spec(f"chunks={WORDS}")
    settings = config(lanes(source(sim, cut), source(sim, ok), continue_on_cut="restart"))
    with serve_gateway(settings) as gw:
        body = {"model": "primary", "messages": HELLO, "stream": True}
        status, headers, text, payloads = await stream_text(http, f"{gw.v1}/chat/completions", body)
    assert status == 200 and text == FULL_ANSWER and payloads[-1] == "[DONE]"
    assert headers["x-laneway-lane"] == "primary", "the head went out on the primary"
    assert len({p["id"] for p in payloads if isinstance(p, dict)}) == 1, "one answer"
    assert (await hits(http, sim, cut), await hits(http, sim, ok)) == (1, 1)


async def test_a_stream_cut_without_restart_ends_with_the_error_event(
    sim: RunningSim, http: aiohttp.ClientSession
) -> None:
    cut, ok = unique_spec(f"chunks={WORDS},cut_after=10"), unique_spec(f"chunks={WORDS}")
    settings = config(lanes(source(sim, cut), source(sim, ok)))
    with serve_gateway(settings) as gw:
        body = {"model": "primary", "messages": HELLO, "stream": True}
        status, _, text, payloads = await stream_text(http, f"{gw.v1}/chat/completions", body)
    assert status == 200 and text == "".join(answer_pieces(WORDS)[:10])
    assert payloads[-1]["error"]["code"] == "stream_interrupted" and "[DONE]" not in payloads
    assert await hits(http, sim, ok) == 0


@pytest.mark.parametrize("stream", [False, True])
async def test_a_lane_that_is_not_ready_is_served_by_its_chain(
    sim: RunningSim, http: aiohttp.ClientSession, stream: bool
) -> None:
    unused, ok = unique_spec("ok"), unique_spec(f"chunks={WORDS}")
    records = Records()
    settings = config(lanes(unready(sim, unused), source(sim, ok)))
    with serve_gateway(settings, observers=[records]) as gw:
        body = {"model": "primary", "messages": HELLO, "stream": stream}
        async with http.post(f"{gw.v1}/chat/completions", json=body) as response:
            assert response.status == 200
            assert response.headers["x-laneway-lane"] == "rescue"
        async with http.get(f"{gw.url}/readyz") as response:
            ready = await response.json()
            assert response.status == 200, "every lane can serve"
    skipped, served = records.records
    assert (skipped.lane, skipped.error, skipped.attempts[0].outcome) == (
        "primary",
        "lane_not_ready",
        "not_ready",
    )
    assert UNSET in skipped.attempts[0].message
    assert (served.lane, served.outcome) == ("rescue", "ok")
    assert ready["lanes"]["primary"]["ready"] is False
    assert ready["lanes"]["primary"]["serves_via"] == "rescue"
    assert UNSET in ready["lanes"]["primary"]["problems"][0]
    assert (await hits(http, sim, unused), await hits(http, sim, ok)) == (0, 1)


async def test_a_chain_with_no_ready_lane_is_503_naming_every_lane(
    sim: RunningSim, http: aiohttp.ClientSession
) -> None:
    first, second = unique_spec("ok"), unique_spec("ok")
    settings = config(lanes(unready(sim, first), unready(sim, second)))
    with serve_gateway(settings) as gw:
        for stream in (False, True):
            body = {"model": "primary", "messages": HELLO, "stream": stream}
            status, _, answer = await post(http, f"{gw.v1}/chat/completions", body)
            assert status == 503 and answer["error"]["code"] == "lane_not_ready"
            assert "'primary'" in answer["error"]["message"]
            assert "fallback lane 'rescue'" in answer["error"]["message"]
        async with http.get(f"{gw.url}/readyz") as response:
            ready = await response.json()
            assert response.status == 503
    assert ready["lanes"]["primary"]["serves_via"] is None
    assert (await hits(http, sim, first), await hits(http, sim, second)) == (0, 0)


def test_laneway_serve_logs_the_skipped_lane_and_why(logged_serve: LoggedServe) -> None:
    chat = f"{logged_serve.url}/v1/chat/completions"
    assert post_sync(chat, {"model": "primary", "messages": HELLO}, AUTH) == 200
    lines = logged_serve.log_lines({"primary", "rescue"}, count=2)
    assert "NOT READY (served by fallback lane rescue)" in logged_serve.banner
    skipped, served = lines
    assert (skipped["lane"], skipped["error"]) == ("primary", "lane_not_ready")
    assert UNSET in skipped["reason"]
    assert (served["lane"], served["status"]) == ("rescue", 200)


CHEAP = {"input": 0.0, "output": 1.0}
DEAR = {"input": 0.0, "output": 100.0}
"""USD per million tokens: the estimate (prompt only) is 0, the real cost names the lane priced."""


def budgeted(lanes_: dict[str, Any]) -> Any:
    key = {"name": "team", "key": "k-team", "lanes": ["primary"], "budget": {"daily": 100.0}}
    return config(lanes_, keys=[key])


async def test_a_budget_pays_the_price_of_the_lane_that_answered(
    sim: RunningSim, http: aiohttp.ClientSession
) -> None:
    down, ok = unique_spec("status=500"), unique_spec(f"chunks={WORDS}")
    settings = budgeted(lanes(source(sim, down, price=CHEAP), source(sim, ok, price=DEAR)))
    with serve_gateway(settings) as gw:
        auth = {"Authorization": "Bearer k-team"}
        for stream in (False, True):
            body = {"model": "primary", "messages": HELLO, "stream": stream}
            async with http.post(f"{gw.v1}/chat/completions", json=body, headers=auth) as reply:
                assert reply.status == 200 and reply.headers["x-laneway-lane"] == "rescue"
                await reply.read()
        ledger = gw.gateway.limits.ledger if gw.gateway.limits is not None else None
        assert isinstance(ledger, MemoryKeyLedger)
        day, _ = periods(SystemClock().wall())
        rescue_rate = 2 * WORDS * DEAR["output"] / 1e6
        # a stream settles once its last bytes are sent: after the client has read them
        await wait_until(lambda: ledger.spent("team", day) >= rescue_rate * 0.999, timeout=5)
        spent = ledger.spent("team", day)
    assert spent == pytest.approx(rescue_rate), "both calls priced at the rescue's rate"
    assert (await hits(http, sim, down), await hits(http, sim, ok)) == (2, 2)


async def test_a_budget_is_refused_a_lane_whose_fallback_is_unpriced(
    sim: RunningSim, http: aiohttp.ClientSession
) -> None:
    primary, rescue = unique_spec("ok"), unique_spec("ok")
    unpriced = source(sim, rescue, model="no-such-model-x")
    settings = budgeted(lanes(source(sim, primary, price=CHEAP), unpriced))
    with serve_gateway(settings) as gw:
        body = {"model": "primary", "messages": HELLO}
        status, _, answer = await post(
            http, f"{gw.v1}/chat/completions", body, Authorization="Bearer k-team"
        )
    assert status == 403 and answer["error"]["code"] == "unpriced_lane"
    assert "rescue/openai:no-such-model-x" in answer["error"]["message"]
    assert (await hits(http, sim, primary), await hits(http, sim, rescue)) == (0, 0)
