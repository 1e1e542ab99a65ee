"""The admin API over HTTP on one gateway: keys and teams made, listed, changed, rotated
and revoked; bad input named by field; failed admin authentication bounded and logged;
every action audited; spend by key, team and lane."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from laneway.app.composer import build_gateway
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.keys.test_stored_lookup import chat
from tests.server.support import RunningGateway, config, serve_app, source

Http = aiohttp.ClientSession


@pytest.fixture
def served(sim: RunningSim, tmp_path: Path) -> Iterator[RunningGateway]:
    lanes = {name: {"sources": [source(sim, unique_spec(""))]} for name in ("a", "b")}
    settings = config(
        lanes,
        keys=[{"name": "cfg", "key": "sk-config"}],
        admin_keys=[{"name": "ops", "key": "adm-secret"}],
        key_store_poll=0.05,
    )
    settings = settings.model_copy(
        update={"telemetry": settings.telemetry.model_copy(update={"flush_interval": 0.05})}
    )
    with serve_app(build_gateway(settings, {}, tmp_path)) as running:
        yield running


async def test_create_use_list_rotate_revoke(served: RunningGateway, http: Http) -> None:
    status, made = await admin(http, served.url, "POST", "/admin/keys", {"name": "svc"})
    assert status == 201 and made["key"].startswith("sk-lw-")
    assert made["prefix"] == made["key"][:10]
    assert await chat(http, served, made["key"]) == 200
    status, listed = await admin(http, served.url, "GET", "/admin/keys")
    assert status == 200 and [k["name"] for k in listed] == ["svc"]
    assert "key" not in listed[0] and made["key"] not in str(listed)
    status, rotated = await admin(
        http, served.url, "POST", f"/admin/keys/{made['id']}/rotate", {"grace": "1h"}
    )
    assert status == 200 and rotated["key"] != made["key"]
    assert await chat(http, served, made["key"]) == 200  # within its grace
    assert await chat(http, served, rotated["key"]) == 200
    status, _ = await admin(http, served.url, "DELETE", f"/admin/keys/{made['id']}")
    assert status == 200
    assert await chat(http, served, rotated["key"]) == 401
    assert await chat(http, served, made["key"]) == 401


async def test_patch_blocks_and_limits(served: RunningGateway, http: Http) -> None:
    _, made = await admin(http, served.url, "POST", "/admin/keys", {"name": "x", "lanes": ["a"]})
    assert await chat(http, served, made["key"], "b") == 403
    path = f"/admin/keys/{made['id']}"
    status, patched = await admin(http, served.url, "PATCH", path, {"rpm": 1})
    assert status == 200 and patched["rpm"] == 1 and patched["lanes"] == ["a"]
    assert await chat(http, served, made["key"]) == 200
    assert await chat(http, served, made["key"]) == 429
    await admin(http, served.url, "PATCH", path, {"blocked": True})
    assert await chat(http, served, made["key"]) == 401
    _, expired = await admin(
        http, served.url, "POST", "/admin/keys", {"name": "gone", "expires_at": 1.0}
    )
    assert await chat(http, served, expired["key"]) == 401


@pytest.mark.parametrize(
    ("body", "param", "status"),
    [
        ({}, "name", 422),
        ({"name": "y", "rpm": 0}, "rpm", 422),
        ({"name": "y", "lanes": ["a", "nope"]}, "lanes[1]", 422),
        ({"name": "y", "budget": {"amount": 5, "period": "year"}}, "budget.period", 422),
        ({"name": "y", "team": "nobody"}, "team", 422),
        ({"name": "y", "colour": "red"}, "colour", 422),
        ({"name": "y", "expires_in": "soon"}, "expires_in", 422),
        ({"name": "cfg"}, "name", 409),
    ],
)
async def test_bad_input_names_the_field(
    served: RunningGateway, http: Http, body: dict[str, object], param: str, status: int
) -> None:
    got, answer = await admin(http, served.url, "POST", "/admin/keys", body)
    assert got == status and answer["error"]["param"] == param


async def test_teams_bound_their_keys(served: RunningGateway, http: Http) -> None:
    team = {"name": "ml", "lanes": ["a"], "rpm": 10, "budget": {"amount": 5, "period": "day"}}
    status, made = await admin(http, served.url, "POST", "/admin/teams", team)
    assert status == 201 and made["rpm"] == 10
    over = {"name": "k", "team": "ml", "rpm": 11}
    status, answer = await admin(http, served.url, "POST", "/admin/keys", over)
    assert status == 422 and answer["error"]["param"] == "rpm"
    status, answer = await admin(
        http, served.url, "POST", "/admin/keys", {"name": "k", "team": "ml", "lanes": ["b"]}
    )
    assert status == 422 and answer["error"]["param"] == "lanes[0]"
    status, key = await admin(http, served.url, "POST", "/admin/keys", {"name": "k", "team": "ml"})
    assert status == 201 and key["lanes"] == ["a"] and key["rpm"] == 10
    status, shown = await admin(http, served.url, "GET", "/admin/teams/ml")
    assert status == 200 and shown["keys"] == [key["id"]]
    status, _ = await admin(http, served.url, "DELETE", "/admin/teams/ml")
    assert status == 409
    await admin(http, served.url, "PATCH", "/admin/teams/ml", {"blocked": True})
    assert await chat(http, served, key["key"]) == 401


async def test_admin_auth_is_bounded_and_logged(
    served: RunningGateway, http: Http, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = {"Authorization": "Bearer not-the-admin-key"}
    with caplog.at_level(logging.WARNING, logger="laneway.admin"):
        statuses = [
            (await admin(http, served.url, "GET", "/admin/keys", headers=wrong))[0]
            for _ in range(6)
        ]
    assert statuses == [401] * 5 + [429]
    assert "not-the-admin-key" not in caplog.text
    assert caplog.text.count("wrong credentials from 127.0.0.1 on GET /admin/keys") == 5
    status, _ = await admin(http, served.url, "GET", "/admin/keys", headers={})
    assert status == 429  # the same address, still within the window
    assert (await chat(http, served, "adm-secret")) == 401  # not a data-plane key


async def test_audit_spend_and_openapi(served: RunningGateway, http: Http) -> None:
    await admin(http, served.url, "POST", "/admin/teams", {"name": "ml"})
    _, key = await admin(http, served.url, "POST", "/admin/keys", {"name": "s", "team": "ml"})
    await admin(http, served.url, "PATCH", f"/admin/keys/{key['id']}", {"rpm": 5})
    status, audit = await admin(http, served.url, "GET", "/admin/audit")
    assert status == 200
    assert [a["action"] for a in audit][:3] == ["key.update", "key.create", "team.create"]
    assert audit[0]["admin"] == "ops" and audit[0]["before"]["rpm"] is None
    assert audit[0]["after"]["rpm"] == 5 and key["key"] not in str(audit)
    assert await chat(http, served, key["key"]) == 200
    deadline = time.monotonic() + 5.0  # telemetry flushes every 50 ms here
    while not (await admin(http, served.url, "GET", "/admin/spend?by=key"))[1]:
        assert time.monotonic() < deadline, "the call's row never reached telemetry"
    for by, group in (("key", "s"), ("team", "ml"), ("lane", "a")):
        status, rows = await admin(http, served.url, "GET", f"/admin/spend?by={by}&since=1h")
        assert status == 200 and [r[by] for r in rows] == [group] and rows[0]["calls"] == 1
    status, rows = await admin(http, served.url, "GET", "/admin/spend?by=model")
    assert status == 422 and rows["error"]["param"] == "by"
    status, spec = await admin(http, served.url, "GET", "/admin/openapi.json", headers={})
    assert status == 200 and "/admin/keys/{id}/rotate" in spec["paths"]
