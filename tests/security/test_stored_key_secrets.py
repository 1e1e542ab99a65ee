"""The admin API and the key store keep no secret: a ``laneway serve`` session that makes,
uses, rotates and revokes stored keys, then every byte out (answers but the two that hand a
secret over, the process's output, ``/metrics``, ``/status.json``, every row of the key store
and of telemetry) is searched for each secret, the admin key and the store's password."""

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
from tests.security.test_secrets_never_leave import forms, with_password
from tests.server.test_serve_cli import laneway_serve

ADMIN_KEY = "lw-admin-Secr3t-5555"
HELLO = [{"role": "user", "content": "hello"}]


def write_config(tmp_path: Path, sim: RunningSim, store_url: str) -> Path:
    source = {
        "base_url": sim_url(sim, unique_spec("")),
        "model": "m",
        "price": {"input": 1, "output": 2},
    }
    config = {
        "lanes": {"ok": {"sources": [source]}},
        "server": {
            "admin_keys": [{"name": "ops", "key": "os.environ/ADMIN_KEY"}],
            "key_store": store_url,
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
        await send("GET", "/metrics", **admin)
        await send("GET", "/status.json", **admin)
    return seen, made


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
    with laneway_serve("--config", str(config), env={"ADMIN_KEY": ADMIN_KEY}) as (proc, url, _):
        answers, made = await session(url)
        proc.send_signal(signal.SIGTERM)
        output, _ = await asyncio.to_thread(proc.communicate, timeout=30)
    assert len(made) == 2
    calls = sqlite3.connect(tmp_path / "calls.sqlite3").execute("SELECT * FROM calls").fetchall()
    assert len(calls) == 3  # two calls of the first secret, one of the rotated one
    captured = {
        "output": output,
        "answers": b"\n".join(answers),
        "store": "\n".join(await store_rows(pg_dsn, schema)).encode(),
        "telemetry": json.dumps([[str(v) for v in row] for row in calls]).encode(),
    }
    assert b"key.rotate" in captured["store"] and b"svc" in captured["store"]
    for where, text in captured.items():
        for secret in (*made, ADMIN_KEY, "pg-Secr3t@pass:3333"):
            for form in forms(secret):
                at = text.find(form)
                assert at < 0, f"{secret!r} leaked into {where}: {text[at - 300 : at + 80]!r}"
