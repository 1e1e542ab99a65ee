"""A whole ``laneway serve`` session with recognisable secrets: not one byte of them leaves.

The upstream (the simulator's ``echo_key``) quotes the key it was sent in its
400, 401, 429, 5xx answers and in a stream's error event; a caller sends the
server key as a model name and as its request id; telemetry goes to
PostgreSQL through a URL with a password, shared state to a Redis URL with
one. Every byte out is kept (answers with their headers, the process's
output, ``/metrics``, ``/readyz``, the telemetry rows) and searched for each
secret as written, percent-encoded and JSON-escaped.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import asyncpg
import orjson
import yaml

from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.server.test_serve_cli import laneway_serve

UPSTREAM_KEY = "sk-upstream-Secr3t/Value+1111"
SERVER_KEY = "lw-server-Secr3t-2222"
PG_PASSWORD = "pg-Secr3t@pass:3333"
REDIS_PASSWORD = "redis-Secr3t-4444"
SECRETS = (UPSTREAM_KEY, SERVER_KEY, PG_PASSWORD, REDIS_PASSWORD)
ECHOING = {"e400": "status=400", "e401": "status=401", "e429": "status=429", "e503": "status=503"}
HELLO = [{"role": "user", "content": "hello"}]
PRICE = {"input": 1, "output": 2}


def write_config(tmp_path: Path, sim: RunningSim, pg_url: str) -> Path:
    def source(spec: str) -> dict[str, Any]:
        """A priced source: the server starts without searching the price catalogue."""
        base = sim_url(sim, unique_spec(spec))
        key = "os.environ/UPSTREAM_KEY"
        return {"base_url": base, "model": "sim-model", "api_key": key, "price": PRICE}

    lanes: dict[str, Any] = {"ok": {"sources": [source("")]}}
    lanes |= {name: {"sources": [source(f"echo_key,{spec}")]} for name, spec in ECHOING.items()}
    lanes["estream"] = {"sources": [source("echo_key")]}
    lanes["eembed"] = {"kind": "embed", "sources": [source("echo_key,status=500")]}
    config = {
        "lanes": lanes,
        "server": {"keys": [{"name": "ops", "key": "os.environ/SERVER_KEY"}]},
        "state": {"url": f"redis://:{REDIS_PASSWORD}@127.0.0.1:6379/0"},
        "telemetry": {"url": pg_url, "flush_interval": "50ms"},
    }
    path = tmp_path / "laneway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def with_password(dsn: str, schema: str) -> str:
    parts = urlsplit(dsn)
    user = parts.username or "postgres"
    netloc = f"{user}:{quote(PG_PASSWORD, safe='')}@{parts.hostname}:{parts.port or 5432}"
    return parts._replace(netloc=netloc, query=f"schema={schema}").geturl()


async def session(url: str) -> list[bytes]:
    """Every answer of the session, status line and headers included."""
    seen: list[bytes] = []
    auth = {"authorization": f"Bearer {SERVER_KEY}"}
    async with aiohttp.ClientSession() as http:

        async def send(method: str, path: str, body: Any = None, **headers: str) -> int:
            data = None if body is None else orjson.dumps(body)
            async with http.request(method, url + path, data=data, headers=headers) as answer:
                seen.append(f"{answer.status} {dict(answer.headers)}".encode())
                seen.append(await answer.read())
                return answer.status

        chat = "/v1/chat/completions"
        assert await send("GET", "/readyz") == 200
        assert await send("POST", chat, {"model": "ok", "messages": HELLO}, **auth) == 200
        for lane in (*ECHOING, "estream"):
            for stream in (False, True):
                body = {"model": lane, "messages": HELLO, "stream": stream}
                await send("POST", chat, body, **auth, **{"x-request-id": SERVER_KEY})
        await send("POST", "/v1/embeddings", {"model": "eembed", "input": "x"}, **auth)
        assert await send("POST", chat, {"model": SERVER_KEY, "messages": HELLO}, **auth) == 404
        assert await send("POST", chat, {"model": "ok", "messages": HELLO}) == 401
        assert await send("GET", "/v1/models", **auth) == 200
        assert await send("GET", "/metrics", **auth) == 200
    return seen


async def telemetry_rows(dsn: str, schema: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(f'SELECT * FROM "{schema}".calls')
    finally:
        await conn.close()
    return [json.dumps([str(value) for value in row.values()]) for row in rows]


def forms(secret: str) -> set[bytes]:
    return {
        secret.encode(),
        quote(secret, safe="").encode(),
        json.dumps(secret)[1:-1].encode(),
    }


async def test_no_secret_leaves_a_whole_session(sim, pg_dsn, pg_schemas, tmp_path) -> None:
    schema = pg_schemas()
    config = write_config(tmp_path, sim, with_password(pg_dsn, schema))
    env = {"UPSTREAM_KEY": UPSTREAM_KEY, "SERVER_KEY": SERVER_KEY}
    with laneway_serve("--config", str(config), env=env) as (proc, url, banner):
        answers = await session(url)
        proc.send_signal(signal.SIGTERM)  # the shutdown flushes the telemetry still queued
        output, _ = await asyncio.to_thread(proc.communicate, timeout=30)
    rows = await telemetry_rows(pg_dsn, schema)
    assert len(rows) == 12, rows  # one per call; the 404 and the 401 made none
    captured = {
        "banner": banner.encode(),
        "output": output,
        "answers": b"\n".join(answers),
        "telemetry": "\n".join(rows).encode(),
    }
    for where, text in captured.items():
        for secret in SECRETS:
            for form in forms(secret):
                assert form not in text, f"{secret!r} leaked into {where}"
    assert b"Incorrect API key provided: Bearer [redacted]" in captured["answers"]
    assert b"[redacted]" in captured["telemetry"]
