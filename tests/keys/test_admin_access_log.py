"""Admin requests in the access log: a line each, naming the admin key, the action and its
target, never a secret."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import orjson
import pytest

from laneway.app.composer import build_gateway
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.server.support import config, serve_app, source


@pytest.mark.parametrize("log_format", ["json", "text"])
async def test_each_admin_request_is_a_line_of_the_access_log(
    sim: RunningSim,
    tmp_path: Path,
    http: aiohttp.ClientSession,
    capsys: pytest.CaptureFixture[str],
    log_format: str,
) -> None:
    lanes = {"a": {"sources": [source(sim, unique_spec(""))]}}
    settings = config(lanes, admin_keys=[{"name": "ops", "key": "adm-secret"}])
    gateway = build_gateway(settings, {}, tmp_path, access_log=log_format)  # type: ignore[arg-type]
    with serve_app(gateway) as gw:
        _, made = await admin(http, gw.url, "POST", "/admin/keys", {"name": "svc"})
        await admin(http, gw.url, "PATCH", f"/admin/keys/{made['id']}", {"rpm": 5})
        await admin(http, gw.url, "GET", "/admin/keys")
        wrong = {"Authorization": "Bearer nope"}
        await admin(http, gw.url, "GET", "/admin/keys", headers=wrong)
    out = capsys.readouterr().err
    assert made["key"] not in out and "adm-secret" not in out and "nope" not in out
    if log_format == "text":
        lines = [line for line in out.splitlines() if " admin " in line]
        assert (
            f"201 admin POST /admin/keys admin=ops action=key.create target={made['id']}"
            in (lines[0])
        )
        assert " 401 admin GET /admin/keys admin=- action=-" in lines[3]
        return
    found = [orjson.loads(line) for line in out.splitlines() if '"event":"admin"' in line]
    assert [(f["method"], f["status"], f["admin"], f["action"]) for f in found] == [
        ("POST", 201, "ops", "key.create"),
        ("PATCH", 200, "ops", "key.update"),
        ("GET", 200, "ops", None),
        ("GET", 401, None, None),
    ]
    assert found[1]["target"] == made["id"] and found[1]["path"] == f"/admin/keys/{made['id']}"
    assert all(f["request_id"] for f in found)
