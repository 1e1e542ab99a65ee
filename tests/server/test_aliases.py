"""Aliases: callers' own model names reach a lane, are listed as aliases, and show in errors."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from laneway.config.models import LanewayConfig
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, post, serve_gateway, source

KEYS = [
    {"name": "all", "sha256": hashlib.sha256(b"key-all").hexdigest()},
    {"name": "only-a", "sha256": hashlib.sha256(b"key-only-a").hexdigest(), "lanes": ["a"]},
]


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes = {name: {"sources": [source(sim, unique_spec(""))]} for name in ("a", "b")}
    settings = LanewayConfig.model_validate(
        {"lanes": lanes, "aliases": {"gpt-4o": "a", "gpt-4o-mini": "b"}, "server": {"keys": KEYS}}
    )
    with serve_gateway(settings) as running:
        yield running


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_an_alias_reaches_its_lane(gw, http) -> None:
    body = {"model": "gpt-4o", "messages": HELLO}
    status, headers, _ = await post(http, f"{gw.v1}/chat/completions", body, **bearer("key-all"))
    assert status == 200 and headers["X-Laneway-Lane"] == "a"


async def test_an_alias_is_permitted_as_its_lane_is(gw, http) -> None:
    for model, status in [("gpt-4o", 200), ("gpt-4o-mini", 403)]:
        body = {"model": model, "messages": HELLO}
        answer = await post(http, f"{gw.v1}/chat/completions", body, **bearer("key-only-a"))
        assert answer[0] == status


async def test_models_lists_aliases_as_such(gw, http) -> None:
    async with http.get(f"{gw.v1}/models", headers=bearer("key-all")) as response:
        data = (await response.json())["data"]
    assert [(m["id"], m.get("alias_of")) for m in data] == [
        ("a", None),
        ("b", None),
        ("gpt-4o", "a"),
        ("gpt-4o-mini", "b"),
    ]
    async with http.get(f"{gw.v1}/models", headers=bearer("key-only-a")) as response:
        data = (await response.json())["data"]
    assert [m["id"] for m in data] == ["a", "gpt-4o"]
    async with http.get(f"{gw.v1}/models/gpt-4o", headers=bearer("key-only-a")) as response:
        assert (await response.json())["alias_of"] == "a"
    async with http.get(f"{gw.v1}/models/gpt-4o-mini", headers=bearer("key-only-a")) as response:
        assert response.status == 404


async def test_an_unknown_model_names_lanes_and_aliases(gw, http) -> None:
    body = {"model": "gpt-5", "messages": HELLO}
    status, _, answer = await post(http, f"{gw.v1}/chat/completions", body, **bearer("key-all"))
    assert status == 404
    assert answer["error"]["message"] == (
        "unknown lane 'gpt-5'; lanes: a, b; aliases: gpt-4o -> a, gpt-4o-mini -> b"
    )
