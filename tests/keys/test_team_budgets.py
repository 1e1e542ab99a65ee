"""Over HTTP: a team's budget is shared by its keys and its refusal names the team; keys and
teams take week and total budgets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from laneway.app.composer import build_gateway
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.server.support import HELLO, RunningGateway, config, post, serve_app, source

PRICE = {"input": 0.0, "output": 2.0}
"""USD per million tokens: a call's estimate (prompt only) is 0, its real cost is not."""


@pytest.fixture
def served(sim: RunningSim, tmp_path: Path) -> Iterator[RunningGateway]:
    lanes = {"a": {"sources": [source(sim, unique_spec(""), price=PRICE)]}}
    settings = config(lanes, admin_keys=[{"name": "ops", "key": "adm-secret"}], key_store_poll=0.05)
    with serve_app(build_gateway(settings, {}, tmp_path)) as running:
        yield running


async def chat(http: aiohttp.ClientSession, gw: RunningGateway, key: str):
    headers = {"Authorization": f"Bearer {key}"}
    return await post(
        http, f"{gw.v1}/chat/completions", {"model": "a", "messages": HELLO}, **headers
    )


async def test_a_teams_week_budget_is_spent_by_its_keys_together(served, http) -> None:
    team = {"name": "ml", "budget": {"amount": 1e-9, "period": "week"}}
    assert (await admin(http, served.url, "POST", "/admin/teams", team))[0] == 201
    keys = []
    for name in ("alice", "bob"):
        status, made = await admin(
            http, served.url, "POST", "/admin/keys", {"name": name, "team": "ml"}
        )
        assert status == 201
        keys.append(made["key"])
    status, _, _ = await chat(http, served, keys[0])
    assert status == 200, "the estimate (no completion yet) fits; the real cost passes the cap"
    status, headers, body = await chat(http, served, keys[1])
    assert status == 429, body
    assert body["error"]["code"] == "team_weekly_budget_exceeded"
    assert "team 'ml' (of key 'bob')" in body["error"]["message"]
    assert headers["X-RateLimit-Limit-Team-Budget-Weekly"] == "1e-09"


async def test_a_total_budget_is_taken_and_a_spent_one_says_not_to_retry(served, http) -> None:
    body = {"name": "once", "budget": {"amount": 1e-9, "period": "total"}}
    status, made = await admin(http, served.url, "POST", "/admin/keys", body)
    assert status == 201 and made["budget"] == {"amount": 1e-9, "period": "total"}
    assert (await chat(http, served, made["key"]))[0] == 200
    status, headers, refused = await chat(http, served, made["key"])
    assert status == 429 and refused["error"]["code"] == "key_total_budget_exceeded"
    assert headers["x-should-retry"] == "false" and "Retry-After" not in headers
