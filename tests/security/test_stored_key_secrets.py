"""The admin API and the key store keep no secret: a ``laneway serve`` session that makes,
uses, rotates and revokes stored keys, spends a team's budget (a budget alert to a webhook
whose URL is a secret), then every byte out (answers but those that hand a secret over, the
process's output with its access log, ``/metrics``, ``/status`` and ``/status.json`` with
their budgets, the webhook's bodies, every row of the key store and of telemetry) is searched
for each secret, the admin key, the webhook's URL and the store's password."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import orjson
import yaml

from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.keys.webhook import receiver
from tests.security.test_secrets_never_leave import forms, with_password
from tests.server.test_serve_cli import laneway_serve

ADMIN_KEY = "lw-admin-Secr3t-5555"
WATCH_KEY = "lw-watch-Secr3t-6666"
HOOK_TOKEN = "T0-hook-Secr3t-7777"
HELLO = [{"role": "user", "content": "hello"}]


def write_config(tmp_path: Path, sim: RunningSim, store_url: str) -> Path:
    """Stored keys in ``store_url``, a watching key of the config, budget alerts to the webhook
    whose URL (``HOOK_URL``) holds ``HOOK_TOKEN``."""
    source = {
        "base_url": sim_url(sim, unique_spec("")),
        "model": "m",
        "price": {"input": 1, "output": 2},
    }
    config = {
        "lanes": {"ok": {"sources": [source]}},
        "server": {
            "admin_keys": [{"name": "ops", "key": "os.environ/ADMIN_KEY"}],
            "keys": [{"name": "watch", "key": "os.environ/WATCH_KEY"}],
            "key_store": store_url,
            "alerts": {"webhook": "os.environ/HOOK_URL"},
        },
        "telemetry": {"url": "calls.sqlite3", "flush_interval": "50ms"},
    }
    path = tmp_path / "laneway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def session(url: str) -> tuple[list[bytes], list[str]]:
    """Every answer that hands no secret over, and the secrets handed over."""
    seen: list[bytes] = []
    made: list[str] = []
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    async with aiohttp.ClientSession() as http:

        async def send(method: str, path: str, body: Any = None, **headers: str) -> Any:
            data = None if body is None else orjson.dumps(body)
            async with http.request(method, url + path, data=data, headers=headers) as answer:
                raw = await answer.read()
                if path.startswith("/admin/keys") and method == "POST" and answer.status < 300:
                    made.append(orjson.loads(raw)["key"])
                else:
                    seen.extend([f"{answer.status} {dict(answer.headers)}".encode(), raw])
                return orjson.loads(raw) if raw.startswith(b"{") or raw.startswith(b"[") else raw

        chat = "/v1/chat/completions"
        key = await send(
            "POST",
            "/admin/keys",
            {"name": "svc", "budget": {"amount": 9, "period": "day"}},
            **admin,
        )
        for secret in (made[0], made[0], "sk-lw-wrong"):
            await send(
                "POST", chat, {"model": "ok", "messages": HELLO}, authorization=f"Bearer {secret}"
            )
        await send("POST", f"/admin/keys/{key['id']}/rotate", {"grace": "1m"}, **admin)
        await send(
            "POST", chat, {"model": made[1], "messages": HELLO}, authorization=f"Bearer {made[1]}"
        )
        bearer = {"authorization": f"Bearer {made[1]}"}
        await send("POST", chat, {"model": "ok", "messages": HELLO}, **bearer)
        for path in ("/admin/keys", f"/admin/keys/{key['id']}", "/admin/audit", "/admin/spend"):
            await send("GET", path, **admin)
        await send("GET", "/admin/keys", authorization=f"Bearer {made[0]}")  # not an admin key
        await send("PATCH", f"/admin/keys/{key['id']}", {"name": made[1]}, **admin)
        await send("DELETE", f"/admin/keys/{key['id']}", **admin)
        await send("POST", "/admin/teams", {"name": "ml", "budget": _TINY}, **admin)
        await send("POST", "/admin/keys", {"name": "spender", "team": "ml"}, **admin)
        spender = {"authorization": f"Bearer {made[2]}"}
        await send("POST", chat, {"model": "ok", "messages": HELLO}, **spender)  # refused
        watch = {"authorization": f"Bearer {WATCH_KEY}"}
        for path in ("/metrics", "/status.json", "/status"):
            await send("GET", path, **watch)
        await send("GET", "/status.json", **admin)
    return seen, made


_TINY = {"amount": 1e-9, "period": "week"}
"""A team budget the first call's estimate passes: refused, it alerts."""


async def store_rows(pg_dsn: str, schema: str) -> list[str]:
    conn = await asyncpg.connect(pg_dsn)
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema
        )
        rows = []
        for table in tables:
            rows += await conn.fetch(f'SELECT * FROM "{schema}"."{table["table_name"]}"')
    finally:
        await conn.close()
    return [json.dumps([str(v) for v in row.values()]) for row in rows]


async def test_no_stored_key_secret_leaves(sim, pg_dsn, pg_schemas, tmp_path) -> None:
    schema = pg_schemas()
    config = write_config(tmp_path, sim, with_password(pg_dsn, schema))
    async with receiver() as hook:
        hook_url = f"{hook.url}/{HOOK_TOKEN}"
        env = {"ADMIN_KEY": ADMIN_KEY, "WATCH_KEY": WATCH_KEY, "HOOK_URL": hook_url}
        with laneway_serve("--config", str(config), env=env) as (proc, url, _):
            answers, made = await session(url)
            await hook.wait_for(1)
            proc.send_signal(signal.SIGTERM)
            output, _ = await asyncio.to_thread(proc.communicate, timeout=30)
    assert len(made) == 3
    assert [body["name"] for body in hook.bodies] == ["ml"] and b"admin" in output
    calls = sqlite3.connect(tmp_path / "calls.sqlite3").execute("SELECT * FROM calls").fetchall()
    assert len(calls) == 3  # two calls of the first secret, one of the rotated one
    captured = {
        "output": output,
        "answers": b"\n".join(answers),
        "store": "\n".join(await store_rows(pg_dsn, schema)).encode(),
        "telemetry": json.dumps([[str(v) for v in row] for row in calls]).encode(),
        "webhook": json.dumps(hook.bodies).encode(),
    }
    assert b'"event":"admin"' in captured["output"] and b"Budgets" in captured["answers"]
    assert b"key.rotate" in captured["store"] and b"svc" in captured["store"]
    for where, text in captured.items():
        for secret in (*made, ADMIN_KEY, WATCH_KEY, HOOK_TOKEN, "pg-Secr3t@pass:3333"):
            for form in forms(secret):
                at = text.find(form)
                assert at < 0, f"{secret!r} leaked into {where}: {text[at - 300 : at + 80]!r}"
