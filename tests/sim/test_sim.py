"""End-to-end tests of the sim over loopback HTTP, one sim shared by the module.

Each test names its own `id=` token, so counters and hits never leak between tests.
The timings (`sleep`, `ttfb`, `delay`, a stream gone silent) are measured on the
same app in virtual time (`tests.virtual`): exact, and no real seconds spent.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import openai
import orjson
import pytest

from laneway import sim
from laneway.core.transport import HttpRequest, HttpStream
from laneway.sim._waits import client_left_before
from tests.virtual import VirtualSim, in_virtual_time

CHAT = "chat/completions"
HELLO = {"model": "gpt-test", "messages": [{"role": "user", "content": "hello there"}]}


@pytest.fixture(scope="module")
def base_url():
    with sim.start_in_thread() as running:
        yield running.base_url


@pytest.fixture
async def client():
    async with aiohttp.ClientSession() as session:
        yield session


def url(base_url: str, spec: str | None, endpoint: str = CHAT) -> str:
    prefix = f"{base_url}/b/{spec}" if spec is not None else base_url
    return f"{prefix}/v1/{endpoint}"


async def post(client, address: str, body: Any = HELLO) -> tuple[int, Any, Any]:
    async with client.post(address, json=body) as response:
        return response.status, response.headers, orjson.loads(await response.read())


def stream_body(**extra: Any) -> dict[str, Any]:
    return {**HELLO, "stream": True, **extra}


def sim_request(spec: str, body: Any) -> HttpRequest:
    """A POST of ``body`` to the chat endpoint of the virtual sim behaving as ``spec``."""
    headers = {"content-type": "application/json"}
    return HttpRequest("POST", url(VirtualSim.base_url, spec), headers, orjson.dumps(body))


def parse_events(raw: bytes) -> list[Any]:
    """Decode SSE `data:` payloads; `[DONE]` stays a string, bad JSON stays bytes."""
    events: list[Any] = []
    for block in raw.split(b"\n\n"):
        if not block:
            continue
        data = block.removeprefix(b"data: ")
        if data == b"[DONE]":
            events.append("[DONE]")
        else:
            try:
                events.append(orjson.loads(data))
            except orjson.JSONDecodeError:
                events.append(data)
    return events


async def read_stream(client, address: str, body: Any) -> list[Any]:
    async with client.post(address, json=body) as response:
        assert response.status == 200
        assert response.headers["content-type"] == "text/event-stream"
        return parse_events(await response.read())


def content_of(events: list[Any]) -> str:
    return "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])


async def read_until_silent(answer: HttpStream, quiet_seconds: float = 0.3) -> bytes:
    """Read until the stream stays silent for `quiet_seconds`; fail if it ends instead."""
    received = b""
    lines = answer.lines()
    while True:
        try:
            async with asyncio.timeout(quiet_seconds):
                line = await anext(lines)
        except TimeoutError:
            return received
        except StopAsyncIteration:
            raise AssertionError("the stream ended instead of going silent") from None
        received += line + b"\n"


async def test_bare_v1_chat_is_a_normal_completion(client, base_url):
    status, _, body = await post(client, url(base_url, None))

    assert status == 200
    assert body["id"].startswith("chatcmpl-sim-")
    assert body["object"] == "chat.completion"
    assert isinstance(body["created"], int)
    assert body["model"] == "gpt-test"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "sim answer w2 w3 w4"},
            "finish_reason": "stop",
        }
    ]
    prompt_tokens = len("hello there") // 4 + 1
    assert body["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 5,
        "total_tokens": prompt_tokens + 5,
    }


async def test_ok_token_and_model_token(client, base_url):
    _, _, body = await post(client, url(base_url, "ok,model=other,id=model"))

    assert body["model"] == "other"


async def test_unknown_token_is_a_400_naming_it(client, base_url):
    status, _, body = await post(client, url(base_url, "ok,warp=9"))

    assert status == 400
    assert "warp=9" in body["error"]["message"]


async def test_invalid_value_is_a_400_naming_the_token(client, base_url):
    status, _, body = await post(client, url(base_url, "sleep=soon"))

    assert status == 400
    assert "sleep=soon" in body["error"]["message"]


async def test_body_that_is_not_json_is_a_400(client, base_url):
    async with client.post(url(base_url, "id=notjson"), data=b"{nope") as response:
        assert response.status == 400


async def test_unknown_route_is_a_404(client, base_url):
    async with client.get(url(base_url, "id=route", "completions")) as response:
        assert response.status == 404


async def test_healthz(client, base_url):
    async with client.get(f"{base_url}/healthz") as response:
        assert response.status == 200
        assert await response.text() == "ok"


@pytest.mark.parametrize("token", ["sleep", "ttfb"])
@in_virtual_time
async def test_sleep_and_ttfb_delay_a_plain_answer(vsim: VirtualSim, token: str) -> None:
    started = vsim.clock.now()
    answer = await vsim.transport.send(sim_request(f"{token}=0.2,id=delay", HELLO))
    elapsed = vsim.clock.now() - started

    assert answer.status == 200
    assert elapsed == pytest.approx(0.2)


async def test_status_sends_an_openai_error_with_retry_hints(client, base_url):
    spec = "status=429,retry_after=2,retry_after_ms=1500"
    status, headers, body = await post(client, url(base_url, spec))

    assert status == 429
    assert headers["retry-after"] == "2"
    assert headers["retry-after-ms"] == "1500"
    assert body["error"]["type"] == "rate_limit_error"
    assert body["error"]["code"] == "rate_limit_exceeded"
    assert body["error"]["message"]


async def test_retry_after_date_is_an_http_date_in_the_future(client, base_url):
    status, headers, _ = await post(client, url(base_url, "status=503,retry_after_date=30"))

    assert status == 503
    seconds_ahead = parsedate_to_datetime(headers["retry-after"]).timestamp() - time.time()
    assert 25 < seconds_ahead <= 31


async def test_fail_first_fails_then_succeeds(client, base_url):
    address = url(base_url, "fail_first=2,id=ff")

    statuses = [(await post(client, address))[0] for _ in range(4)]

    assert statuses == [503, 503, 200, 200]


async def test_fail_first_uses_the_given_status(client, base_url):
    address = url(base_url, "fail_first=1,status=500,id=ff500")

    statuses = [(await post(client, address))[0] for _ in range(2)]

    assert statuses == [500, 200]


async def test_fail_after_succeeds_then_fails(client, base_url):
    address = url(base_url, "fail_after=2,id=fa")

    statuses = [(await post(client, address))[0] for _ in range(4)]

    assert statuses == [200, 200, 503, 503]


async def test_fail_first_and_fail_after_count_each_request_once(client, base_url):
    address = url(base_url, "fail_first=1,fail_after=3,status=500,id=ffa")

    statuses = [(await post(client, address))[0] for _ in range(4)]

    assert statuses == [500, 200, 200, 500]


async def test_flaky_follows_its_seeded_rng(client, base_url):
    address = url(base_url, "flaky=0.5,seed=7,id=flaky")
    rng = random.Random(7)
    expected = [503 if rng.random() < 0.5 else 200 for _ in range(12)]

    statuses = [(await post(client, address))[0] for _ in range(12)]

    assert statuses == expected
    assert set(statuses) == {200, 503}


async def test_flap_is_down_in_the_first_half_period(client, base_url):
    status, _, _ = await post(client, url(base_url, "flap=100000,status=502"))

    assert status == 502


async def test_content_filter_and_context_length_codes(client, base_url):
    for token, code in [
        ("content_filter", "content_filter"),
        ("context_length", "context_length_exceeded"),
    ]:
        status, _, body = await post(client, url(base_url, token))

        assert status == 400
        assert body["error"]["code"] == code
        assert body["error"]["type"] == "invalid_request_error"


async def test_window_rejects_only_prompts_longer_than_it(client, base_url):
    address = url(base_url, "window=20")
    long_prompt = {"messages": [{"role": "user", "content": "x" * 21}]}

    short_status, _, _ = await post(client, address)
    long_status, _, long_body = await post(client, address, long_prompt)

    assert short_status == 200
    assert long_status == 400
    assert long_body["error"]["code"] == "context_length_exceeded"


async def test_reject_prefill_refuses_a_final_assistant_message(client, base_url):
    address = url(base_url, "reject_prefill")
    prefill = {"messages": [*HELLO["messages"], {"role": "assistant", "content": "Sure"}]}

    assert (await post(client, address))[0] == 200
    assert (await post(client, address, prefill))[0] == 400


async def test_reasoning_in_a_plain_answer(client, base_url):
    _, _, body = await post(client, url(base_url, "reasoning"))

    assert body["choices"][0]["message"]["reasoning_content"]
    reasoning_tokens = body["usage"]["completion_tokens_details"]["reasoning_tokens"]
    assert body["usage"]["completion_tokens"] == 5 + reasoning_tokens > 5


async def test_nousage_and_empty_in_a_plain_answer(client, base_url):
    _, _, body = await post(client, url(base_url, "nousage,empty"))

    assert "usage" not in body
    assert body["choices"][0]["message"]["content"] == ""


async def test_stream_shape_with_usage(client, base_url):
    body = stream_body(stream_options={"include_usage": True})
    events = await read_stream(client, url(base_url, "chunks=3"), body)

    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk["id"] for chunk in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert content_of(chunks) == "sim answer w2"
    final, usage = chunks[-2], chunks[-1]
    assert final["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert usage["choices"] == []
    assert usage["usage"]["completion_tokens"] == 3


async def test_stream_without_include_usage_has_no_usage_chunk(client, base_url):
    events = await read_stream(client, url(base_url, None), stream_body())

    assert all(event["choices"] for event in events[:-1])
    assert content_of(events[:-1]) == "sim answer w2 w3 w4"


async def test_stream_nousage_and_empty(client, base_url):
    body = stream_body(stream_options={"include_usage": True})
    events = await read_stream(client, url(base_url, "nousage,empty"), body)

    assert content_of(events[:-1]) == ""
    assert all(event["choices"] for event in events[:-1])
    assert events[-1] == "[DONE]"


async def test_stream_reasoning_precedes_content(client, base_url):
    body = stream_body(stream_options={"include_usage": True})
    events = await read_stream(client, url(base_url, "reasoning,chunks=2"), body)

    deltas = [event["choices"][0]["delta"] for event in events[:-1] if event["choices"]]
    kinds = [next(iter(delta)) for delta in deltas[1:-1]]
    assert kinds == ["reasoning_content"] * (len(kinds) - 2) + ["content", "content"]
    assert events[-2]["usage"]["completion_tokens_details"]["reasoning_tokens"] == len(kinds) - 2


@in_virtual_time
async def test_stream_ttfb_and_delay_pace_the_chunks(vsim: VirtualSim) -> None:
    started = vsim.clock.now()
    request = sim_request("ttfb=0.2,delay=0.05,chunks=2", stream_body())
    async with vsim.transport.stream(request) as answer:
        await anext(answer.lines())
        first_chunk_after = vsim.clock.now() - started
        await answer.read()
    total = vsim.clock.now() - started

    assert first_chunk_after == pytest.approx(0.2)
    assert total == pytest.approx(0.2 + 3 * 0.05), (
        "ttfb, then a delay before each content chunk and the finish"
    )


async def test_malformed_event_follows_the_given_chunk(client, base_url):
    events = await read_stream(client, url(base_url, "malformed=1,chunks=2"), stream_body())

    assert events[2] == b"{not json"
    assert events[1]["choices"][0]["delta"] == {"content": "sim"}
    assert events[-1] == "[DONE]"


async def test_cut_after_truncates_the_stream_for_the_client(client, base_url):
    async with client.post(url(base_url, "cut_after=2"), json=stream_body()) as response:
        first_lines = [await response.content.readline() for _ in range(6)]
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()

    assert content_of(parse_events(b"".join(first_lines))) == "sim answer"


@in_virtual_time
async def test_stall_after_goes_silent_after_n_chunks(vsim: VirtualSim) -> None:
    async with vsim.transport.stream(
        sim_request("stall_after=1,id=stall", stream_body())
    ) as answer:
        received = await read_until_silent(answer)

    events = parse_events(received)
    assert content_of(events) == "sim"
    assert all(event["choices"][0]["finish_reason"] is None for event in events)


@in_virtual_time
async def test_nodone_sends_the_final_chunk_then_goes_silent(vsim: VirtualSim) -> None:
    body = stream_body(stream_options={"include_usage": True})
    async with vsim.transport.stream(sim_request("nodone,id=nodone", body)) as answer:
        received = await read_until_silent(answer)

    events = parse_events(received)
    assert "[DONE]" not in events
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    assert "usage" in events[-1]


async def test_hold_after_holds_the_stream_until_the_test_releases_it(client, base_url):
    spec = "hold_after=1,chunks=3,id=hold"
    async with client.post(url(base_url, spec), json=stream_body()) as response:
        before = b"".join([await response.content.readline() for _ in range(4)])  # 2 events
        with pytest.raises(TimeoutError):  # held: nothing more until the release
            await asyncio.wait_for(response.content.readline(), 0.2)
        async with client.post(f"{base_url}/_release", params={"spec": spec}) as released:
            assert await released.json() == {"released": spec}
        after = await response.read()
    async with client.post(url(base_url, spec), json=stream_body()) as response:
        again = await response.read()  # a release is kept: no hold now
    async with client.post(url(base_url, "chunks=3,id=unheld"), json=stream_body()) as response:
        whole = await response.read()

    assert content_of(parse_events(before)) == "sim"
    assert after.endswith(b"data: [DONE]\n\n") and again.endswith(b"data: [DONE]\n\n")
    texts = [
        content_of(parse_events(raw.removesuffix(b"data: [DONE]\n\n")))
        for raw in (before + after, again, whole)
    ]
    assert texts == [texts[2]] * 3


async def test_hold_keeps_the_answer_until_the_test_releases_it(client, base_url):
    spec = "hold,id=hold-answer"
    answer = asyncio.ensure_future(post(client, url(base_url, spec)))
    _, pending = await asyncio.wait({answer}, timeout=0.2)
    async with client.post(f"{base_url}/_release", params={"spec": spec}) as released:
        assert released.status == 200
    status, _, body = await answer

    assert pending == {answer}  # held: no answer before the release
    assert status == 200 and body["choices"][0]["message"]["content"].startswith("sim")


async def test_release_needs_a_spec(client, base_url):
    async with client.post(f"{base_url}/_release") as response:
        assert response.status == 400


async def test_a_held_stream_ends_when_its_client_leaves():
    async def leaves() -> dict[str, str]:
        return {"type": "http.disconnect"}

    assert await client_left_before(leaves, asyncio.Event())


async def test_a_hold_ends_on_release_while_the_client_stays():
    async def stays() -> dict[str, str]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    released = asyncio.Event()
    asyncio.get_running_loop().call_soon(released.set)
    assert not await client_left_before(stays, released)


async def test_embeddings_are_deterministic_unit_vectors(client, base_url):
    body = {"model": "embed-test", "input": ["alpha", "beta"]}
    _, _, first = await post(client, url(base_url, None, "embeddings"), body)
    _, _, again = await post(client, url(base_url, None, "embeddings"), body)

    assert first == again
    assert first["object"] == "list"
    assert first["model"] == "embed-test"
    assert [item["index"] for item in first["data"]] == [0, 1]
    vectors = [item["embedding"] for item in first["data"]]
    assert [len(vector) for vector in vectors] == [8, 8]
    assert vectors[0] != vectors[1]
    assert math.isclose(math.hypot(*vectors[0]), 1.0)
    assert first["usage"]["prompt_tokens"] == first["usage"]["total_tokens"] > 0


async def test_embedding_dimensions_are_honoured_unless_dims_overrides(client, base_url):
    body = {"input": "one text", "dimensions": 5}
    _, _, honoured = await post(client, url(base_url, None, "embeddings"), body)
    _, _, overridden = await post(client, url(base_url, "dims=3,nousage", "embeddings"), body)

    assert [len(item["embedding"]) for item in honoured["data"]] == [5]
    assert [len(item["embedding"]) for item in overridden["data"]] == [3]
    assert "usage" not in overridden


async def test_models_lists_the_sim_model(client, base_url):
    async with client.get(url(base_url, None, "models")) as response:
        body = await response.json()

    assert body["object"] == "list"
    assert [(model["id"], model["object"]) for model in body["data"]] == [("sim-model", "model")]


async def test_rpm_bucket_is_shared_across_specs(client, base_url):
    first = url(base_url, "rpm=2,bucket=shared,id=a")
    second = url(base_url, "rpm=2,bucket=shared,id=b")

    statuses = [(await post(client, first))[0], (await post(client, second))[0]]
    status, headers, body = await post(client, first)

    assert statuses == [200, 200]
    assert status == 429
    assert body["error"]["type"] == "rate_limit_error"
    assert 1 <= int(headers["retry-after"]) <= 60


async def test_rpm_without_retry_after(client, base_url):
    address = url(base_url, "rpm=1,no_retry_after,id=quiet")

    await post(client, address)
    status, headers, _ = await post(client, address)

    assert status == 429
    assert "retry-after" not in headers


async def test_hits_count_requests_per_spec_and_reset_clears_them(client, base_url):
    spec = "fail_first=1,id=hits"
    await post(client, url(base_url, spec))
    await post(client, url(base_url, spec))

    async with client.get(f"{base_url}/_hits", params={"spec": spec}) as response:
        entry = await response.json()
    async with client.get(f"{base_url}/_hits") as response:
        everything = await response.json()
    async with client.post(f"{base_url}/_reset") as response:
        assert response.status == 200
    status_after_reset, _, _ = await post(client, url(base_url, spec))
    async with client.get(f"{base_url}/_hits") as response:
        after_reset = await response.json()

    assert entry["count"] == 2
    assert len(entry["times"]) == 2
    assert entry["times"] == sorted(entry["times"])
    assert everything[spec] == entry
    assert status_after_reset == 503
    assert after_reset == {spec: {"count": 1, "times": after_reset[spec]["times"]}}


async def test_hits_for_an_unseen_spec_are_empty(client, base_url):
    async with client.get(f"{base_url}/_hits", params={"spec": "id=never"}) as response:
        assert await response.json() == {"count": 0, "times": []}


async def test_openai_sdk_retries_and_streams_against_the_sim(base_url):
    sdk = openai.AsyncOpenAI(
        base_url=f"{base_url}/b/fail_first=1,retry_after_ms=10,id=sdk/v1", api_key="sim"
    )
    async with sdk:
        completion = await sdk.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        stream = await sdk.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]

    assert completion.choices[0].message.content == "sim answer w2 w3 w4"
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        == "sim answer w2 w3 w4"
    )
    assert chunks[-1].usage is not None


async def test_stop_hangs_up_on_held_streams_promptly(client):
    with sim.start_in_thread() as running:
        address = url(running.base_url, "stall_after=0")
        async with client.post(address, json=stream_body()) as response:
            await response.content.readline()
            started = time.monotonic()
            await asyncio.to_thread(running.stop)
            stop_took = time.monotonic() - started
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()

    assert stop_took < 1.9


def test_running_sim_reports_its_port(base_url):
    with sim.start_in_thread() as running:
        assert running.port > 0
        assert running.base_url == f"http://127.0.0.1:{running.port}"
        assert running.base_url != base_url


def test_main_parses_host_and_port(monkeypatch):
    served: list[tuple[str, int]] = []
    monkeypatch.setattr("laneway.sim._server.serve", lambda host, port: served.append((host, port)))

    assert sim.main(["--port", "9200"]) == 0
    assert served == [("127.0.0.1", 9200)]
