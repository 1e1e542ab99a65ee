"""The status page shows keys and teams with their spend against their budgets."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from laneway.app.composer import build_gateway
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.keys.test_team_budgets import PRICE
from tests.server.support import HELLO, config, post, serve_app, source
from tests.status.support import status_json

WATCH = {"Authorization": "Bearer sk-watch"}


async def test_the_page_lists_each_budget_with_its_spend(
    sim: RunningSim, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    lanes = {"a": {"sources": [source(sim, unique_spec(""), price=PRICE)]}}
    keys = [
        {"name": "watch", "key": "sk-watch"},
        {"name": "nightly", "key": "sk-nightly", "budget": {"daily": 5, "total": 50}},
    ]
    settings = config(lanes, keys=keys, admin_keys=[{"name": "ops", "key": "adm-secret"}])
    with serve_app(build_gateway(settings, {}, tmp_path)) as gw:
        team = {"name": "ml", "budget": {"amount": 1e-9, "period": "week"}}
        assert (await admin(http, gw.url, "POST", "/admin/teams", team))[0] == 201
        for name in ("alice", "bob"):
            body = {"name": name, "team": "ml"}
            assert (await admin(http, gw.url, "POST", "/admin/keys", body))[0] == 201
        _, carol = await admin(http, gw.url, "POST", "/admin/keys", {"name": "carol", "team": "ml"})
        chat = {"model": "a", "messages": HELLO}
        headers = {"Authorization": f"Bearer {carol['key']}"}
        assert (await post(http, f"{gw.v1}/chat/completions", chat, **headers))[0] == 200
        data = await status_json(http, gw, WATCH)
        async with http.get(f"{gw.url}/status", headers=WATCH) as response:
            page = await response.text()
    rows = {(row["owner"], row["name"], row["period"]): row for row in data["budgets"]}
    assert list(rows) == [
        ("team", "ml", "week"),
        ("key", "nightly", "day"),
        ("key", "nightly", "total"),
    ], "one row per budget, the most spent first"
    team_row = rows[("team", "ml", "week")]
    assert team_row["keys"] == ["alice", "bob", "carol"] and team_row["verdict"] == "down"
    assert team_row["spent_usd"] > team_row["budget_usd"] == 1e-9
    assert rows[("key", "nightly", "total")] | {"period_name": "total"} == {
        "owner": "key",
        "name": "nightly",
        "keys": ["nightly"],
        "period": "total",
        "period_name": "total",
        "budget_usd": 50,
        "spent_usd": 0.0,
        "share": 0.0,
        "verdict": "ok",
    }
    assert "<h2>Budgets</h2>" in page and "<b>ml</b><small>3 keys</small>" in page
    assert carol["key"] not in page and carol["key"] not in str(data)
