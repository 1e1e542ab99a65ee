"""Bearer keys, per-key lanes, and the loopback-only rule for a keyless gateway."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
from openai import OpenAI

from laneway.app.checks import bind_refusal
from laneway.cli import serve
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, config, post, serve_gateway, source

KEYS = [
    {"name": "everything", "key": "os.environ/LANEWAY_TEST_KEY_ALL"},
    {"name": "only-a", "sha256": hashlib.sha256(b"key-only-a").hexdigest(), "lanes": ["a"]},
    {"name": "literal", "key": "key-literal", "lanes": ["b"]},
    {"name": "unset", "key": "${LANEWAY_TEST_KEY_UNSET}"},
]
ENVIRON = {"LANEWAY_TEST_KEY_ALL": "key-all"}


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes = {name: {"sources": [source(sim, unique_spec(""))]} for name in ("a", "b")}
    with serve_gateway(config(lanes, keys=KEYS), ENVIRON) as running:
        yield running


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def chat(http, gw: RunningGateway, lane: str, **headers: str):
    return await post(
        http, f"{gw.v1}/chat/completions", {"model": lane, "messages": HELLO}, **headers
    )


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "missing_api_key"),
        ({"Authorization": "Basic a2V5LWFsbA=="}, "missing_api_key"),
        (bearer("key-wrong"), "invalid_api_key"),
        (bearer("key-only"), "invalid_api_key"),
    ],
)
async def test_missing_or_wrong_key_is_401(gw, http, headers, code) -> None:
    status, _, answer = await chat(http, gw, "a", **headers)
    assert status == 401 and answer["error"]["code"] == code
    assert answer["error"]["type"] == "authentication_error"


async def test_key_may_use_only_its_lanes(gw, http) -> None:
    assert (await chat(http, gw, "a", **bearer("key-only-a")))[0] == 200
    assert (await chat(http, gw, "b", **bearer("key-literal")))[0] == 200
    assert (await chat(http, gw, "b", **bearer("key-all")))[0] == 200
    status, _, answer = await chat(http, gw, "b", **bearer("key-only-a"))
    assert status == 403 and answer["error"]["code"] == "permission_denied"
    status, _, answer = await chat(http, gw, "c", **bearer("key-only-a"))
    assert status == 404 and answer["error"]["message"].endswith("lanes: a")


async def test_models_lists_the_lanes_of_the_key(gw, http) -> None:
    for key, lanes in [("key-only-a", ["a"]), ("key-literal", ["b"]), ("key-all", ["a", "b"])]:
        async with http.get(f"{gw.v1}/models", headers=bearer(key)) as response:
            assert [m["id"] for m in (await response.json())["data"]] == lanes
    async with http.get(f"{gw.v1}/models") as response:
        assert response.status == 401


async def test_health_needs_no_key_and_readyz_details_need_a_scraping_key(gw, http) -> None:
    """Anyone learns ready or not; lane, key and variable names only a key for every lane."""
    for method in ("GET", "HEAD"):
        async with http.request(method, f"{gw.url}/healthz") as response:
            assert response.status == 200
    for headers in ({}, bearer("key-only-a"), bearer("key-wrong")):
        async with http.get(f"{gw.url}/readyz", headers=headers) as response:
            assert response.status == 200
            assert await response.json() == {"ready": True}
    async with http.get(f"{gw.url}/readyz", headers=bearer("key-all")) as response:
        ready = await response.json()
        assert response.status == 200
    (problem,) = ready["key_problems"]
    assert "LANEWAY_TEST_KEY_UNSET" in problem and "key-all" not in problem
    assert set(ready["lanes"]) == {"a", "b"}


def test_openai_sdk_sends_its_key_as_bearer(gw) -> None:
    with OpenAI(base_url=gw.v1, api_key="key-only-a", max_retries=0) as sdk:
        answer = sdk.chat.completions.create(
            model="a", messages=[{"role": "user", "content": "hello"}]
        )
    assert answer.choices[0].message.content == "sim answer w2 w3 w4"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "::1", "localhost"])
def test_loopback_binds_are_allowed_without_keys(host: str) -> None:
    assert bind_refusal(host, keyed=False, insecure=False) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "gateway.example.com"])
def test_open_gateway_refuses_other_binds_unless_insecure_or_keyed(host: str) -> None:
    refusal = bind_refusal(host, keyed=False, insecure=False)
    assert refusal is not None and "--insecure" in refusal and "server.keys" in refusal
    assert bind_refusal(host, keyed=False, insecure=True) is None
    assert bind_refusal(host, keyed=True, insecure=False) is None


def test_serve_exits_with_a_message_on_a_refused_bind(tmp_path, capsys) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text(
        "lanes:\n  a:\n    sources:\n      - {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
    )
    assert serve.main(["--config", str(path), "--host", "0.0.0.0"]) == 2
    assert "refusing to listen on 0.0.0.0" in capsys.readouterr().err
    assert serve.main(["--config", str(path), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
