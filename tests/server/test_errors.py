"""Error answers over raw HTTP: statuses, OpenAI-shaped bodies, the laneway object."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import (
    HELLO,
    RunningGateway,
    config,
    hits,
    post,
    serve_gateway,
    source,
)

SPECS = {
    "ok": unique_spec(""),
    "filtered": unique_spec("content_filter"),
    "down": unique_spec("status=503"),
    "pushback": unique_spec("status=429,retry_after=60"),
    "slow": unique_spec("sleep=5"),
    "embed": unique_spec("dims=4"),
    "denied": unique_spec("status=401"),
}


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    fast_retry: dict[str, Any] = {
        "retries": 1,
        "retry_on": [503, "cut"],
        "backoff": {"base": "10ms"},
    }
    lanes: dict[str, dict[str, Any]] = {
        "ok": {"sources": [source(sim, SPECS["ok"])]},
        "filtered": {**fast_retry, "sources": [source(sim, SPECS["filtered"])]},
        "down": {**fast_retry, "sources": [source(sim, SPECS["down"])]},
        "pushback": {"max_pushbacks": 1, "sources": [source(sim, SPECS["pushback"])]},
        "slow": {"sources": [source(sim, SPECS["slow"])]},
        "timeout": {"attempt_timeout": "100ms", "sources": [source(sim, SPECS["slow"])]},
        "unreachable": {"sources": [{**source(sim, ""), "base_url": "http://127.0.0.1:9/v1"}]},
        "embed": {"kind": "embed", "dimensions": 8, "sources": [source(sim, SPECS["embed"])]},
        "denied": {"sources": [source(sim, SPECS["denied"])]},
        "keyless": {"sources": [source(sim, "", api_key="os.environ/LANEWAY_TEST_UNSET_KEY")]},
    }
    with serve_gateway(config(lanes, max_request_bytes="1KiB")) as running:
        yield running


@pytest.fixture
async def chat(gw: RunningGateway, http) -> AsyncIterator[object]:
    url = f"{gw.v1}/chat/completions"

    async def call(body: object, **headers: str):
        return await post(http, url, body, **headers)

    yield call


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "body"),
        (b"[1, 2]", "body"),
        ({"messages": HELLO}, "model"),
        ({"model": "ok"}, "messages"),
        ({"model": "ok", "messages": [{"content": "no role"}]}, "messages[0]"),
        ({"model": "ok", "messages": HELLO, "temperature": "hot"}, "temperature"),
        ({"model": "ok", "messages": HELLO, "max_tokens": True}, "max_tokens"),
        ({"model": "ok", "messages": HELLO, "stream": "yes"}, "stream"),
        ({"model": "embed", "messages": HELLO}, "model"),
    ],
)
async def test_invalid_requests_are_400_naming_the_field(chat, body, field) -> None:
    status, _, answer = await chat(body)
    assert status == 400
    assert answer["error"]["param"] == field
    assert answer["error"]["type"] == "invalid_request_error"
    assert answer["error"]["message"].startswith(f"{field}:")


async def test_unknown_lane_is_404_listing_the_lanes(chat) -> None:
    status, headers, answer = await chat({"model": "nope", "messages": HELLO})
    assert status == 404 and answer["error"]["code"] == "model_not_found"
    assert "lanes: ok, filtered, down" in answer["error"]["message"]
    assert headers["x-laneway-attempts"] == "0"


async def test_unknown_path_and_wrong_method(gw, http) -> None:
    async with http.get(f"{gw.v1}/completions") as response:
        assert response.status == 404
    async with http.get(f"{gw.v1}/chat/completions") as response:
        assert response.status == 405 and response.headers["allow"] == "POST"


async def test_body_over_the_limit_is_413_declared_or_streamed(gw, http) -> None:
    status, _, answer = await post(http, f"{gw.v1}/chat/completions", b"x" * 2048)
    assert status == 413 and answer["error"]["code"] == "request_too_large"

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"x" * 512

    async with http.post(f"{gw.v1}/chat/completions", data=chunks()) as response:
        assert response.status == 413
    status, _, _ = await post(http, f"{gw.v1}/chat/completions", {"model": "ok", "messages": HELLO})
    assert status == 200


async def test_upstream_rejection_passes_through_and_is_not_retried(chat, http, sim) -> None:
    status, headers, answer = await chat({"model": "filtered", "messages": HELLO})
    assert status == 400
    assert answer["error"]["code"] == "content_filter"
    assert answer["error"]["message"] == "sim: the prompt was flagged by the content filter"
    assert answer["laneway"]["lane"] == "filtered"
    assert [a["outcome"] for a in answer["laneway"]["attempts"]] == ["400"]
    assert headers["x-laneway-attempts"] == "1"
    assert await hits(http, sim, SPECS["filtered"]) == 1


async def test_upstream_failure_keeps_its_status_and_lists_attempts(chat) -> None:
    status, headers, answer = await chat({"model": "down", "messages": HELLO})
    assert status == 503
    laneway = answer["laneway"]
    assert [(a["outcome"], a["status"]) for a in laneway["attempts"]] == [("503", 503)] * 2
    assert laneway["deadline_ms"] == 60000 and laneway["elapsed_ms"] > 0
    assert headers["x-laneway-source"] == "openai:sim-model"


async def test_refused_pushback_is_429_naming_the_wait_without_retry_after(chat) -> None:
    """The lane called the upstream: the answer says not to retry, so no ``Retry-After`` beside
    it (it was ``60`` before issue 23's defect 2 was fixed); the message names the wait."""
    status, headers, answer = await chat({"model": "pushback", "messages": HELLO})
    assert status == 429 and answer["error"]["code"] == "pushback_refused"
    assert headers["x-should-retry"] == "false" and "retry-after" not in headers
    assert "asked to wait 60s" in answer["error"]["message"]


async def test_upstream_auth_failure_is_502_without_the_upstream_message(chat) -> None:
    status, _, answer = await chat({"model": "denied", "messages": HELLO})
    assert status == 502 and answer["error"]["code"] == "upstream_auth_failed"
    assert "sim:" not in answer["error"]["message"]


async def test_attempt_timeout_is_504_and_connect_failure_502(chat) -> None:
    status, _, answer = await chat({"model": "timeout", "messages": HELLO})
    assert status == 504 and answer["laneway"]["attempts"][0]["outcome"] == "timeout"
    assert answer["error"]["code"] == "upstream_timeout"
    status, _, answer = await chat({"model": "unreachable", "messages": HELLO})
    assert status == 502 and answer["laneway"]["attempts"][0]["outcome"] == "connect"


@pytest.mark.parametrize("encoding", ["float", "base64"])
async def test_dimension_mismatch_is_502(gw, http, encoding) -> None:
    body = {"model": "embed", "input": "x", "encoding_format": encoding}
    status, _, answer = await post(http, f"{gw.v1}/embeddings", body)
    assert status == 502 and answer["error"]["code"] == "dimension_mismatch"


@pytest.mark.parametrize(
    ("header", "value"), [("X-Laneway-Deadline-Ms", "150"), ("X-Stainless-Timeout", "0.15")]
)
async def test_caller_deadline_ends_the_call_by_then_and_not_before(chat, header, value) -> None:
    """Deadline 150 ms less the 50 ms margin: a 504 at 100 ms (+ slack), never earlier."""
    started = time.perf_counter()
    status, _, answer = await chat({"model": "slow", "messages": HELLO}, **{header: value})
    elapsed = time.perf_counter() - started
    assert status == 504 and answer["error"]["code"] == "deadline_exceeded"
    assert answer["laneway"]["deadline_ms"] == 100
    assert 0.09 <= elapsed < 0.1 + 0.2


async def test_bad_deadline_header_is_400(chat) -> None:
    headers = {"X-Laneway-Deadline-Ms": "soon"}
    status, _, answer = await chat({"model": "ok", "messages": HELLO}, **headers)
    assert status == 400 and answer["error"]["param"] == "X-Laneway-Deadline-Ms"


async def test_unready_lane_is_503_and_readyz_names_the_variable(gw, chat, http) -> None:
    status, _, answer = await chat({"model": "keyless", "messages": HELLO})
    assert status == 503 and answer["error"]["code"] == "lane_not_ready"
    assert "LANEWAY_TEST_UNSET_KEY" in answer["error"]["message"]
    async with http.get(f"{gw.url}/readyz") as response:
        ready = await response.json()
        assert response.status == 503
    assert ready["ready"] is False and ready["lanes"]["ok"]["ready"] is True
    (problem,) = ready["lanes"]["keyless"]["problems"]
    assert "LANEWAY_TEST_UNSET_KEY" in problem
    async with http.get(f"{gw.url}/healthz") as response:
        assert response.status == 200
