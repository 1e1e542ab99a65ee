"""Two replicas over HTTP on one PostgreSQL key store, state in Redis (through a proxy the
test cuts): a key made on one answers on the other within 2 s, shares its rpm there, is
rotated and revoked there, and the revocation arrives with Redis cut."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import aiohttp
from redis.asyncio import Redis

from laneway.app.composer import build_gateway
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.keys.test_stored_lookup import chat
from tests.proxy import TcpProxy
from tests.server.support import RunningGateway, config, serve_app, source
from tests.state.conftest import delete_keys


async def settled(http: aiohttp.ClientSession, gw: RunningGateway, key: str, want: int) -> float:
    """Seconds until ``key`` gets ``want`` on ``gw`` (failing past the 2 s bound)."""
    started = time.monotonic()
    while (status := await chat(http, gw, key)) != want:
        assert time.monotonic() - started < 2.0, f"still {status}, not {want}, after 2 s"
    return time.monotonic() - started


async def test_two_replicas_share_the_store(
    sim: RunningSim,
    tmp_path: Path,
    pg_dsn: str,
    pg_schemas: Callable[[], str],
    redis_client: Redis,
    http: aiohttp.ClientSession,
) -> None:
    proxy = TcpProxy(("127.0.0.1", 6379))
    await proxy.start()
    store = f"{pg_dsn}?schema={pg_schemas()}"
    lanes = {"a": {"sources": [source(sim, unique_spec(""))]}}
    name = f"svc-{uuid.uuid4().hex[:8]}"
    settings = config(
        lanes,
        admin_keys=[{"name": "ops", "key": "adm-secret"}],
        key_store=store,
        key_store_poll=0.2,
    )
    settings = settings.model_copy(
        update={
            "state": settings.state.model_copy(
                update={"url": f"redis://127.0.0.1:{proxy.port}/0", "timeout": 0.5}
            )
        }
    )
    stack = ExitStack()  # closed off the loop: the gateways' shutdown goes through the proxy
    try:
        if proxy.port:
            for folder in ("one", "two"):
                (tmp_path / folder).mkdir()
            one, two = (
                stack.enter_context(serve_app(build_gateway(settings, {}, tmp_path / n)))
                for n in ("one", "two")
            )
            _, made = await admin(http, one.url, "POST", "/admin/keys", {"name": name, "rpm": 2})
            await settled(http, two, made["key"], 200)
            assert await chat(http, one, made["key"]) == 200
            assert await chat(http, two, made["key"]) == 429  # rpm 2, counted across both
            path = f"/admin/keys/{made['id']}"
            await admin(http, two.url, "PATCH", path, {"rpm": None})
            _, rotated = await admin(http, two.url, "POST", f"{path}/rotate", {"grace": "1h"})
            await settled(http, one, rotated["key"], 200)
            assert await chat(http, one, made["key"]) == 200  # in its grace
            await proxy.stop()  # Redis cut: the store still carries the revocation
            assert (await admin(http, one.url, "DELETE", path))[0] == 200
            await settled(http, two, rotated["key"], 401)
            await settled(http, two, made["key"], 401)
            _, audit = await admin(http, two.url, "GET", "/admin/audit")
            assert [a["action"] for a in audit][:3] == ["key.delete", "key.rotate", "key.update"]
    finally:
        await proxy.start()
        await asyncio.to_thread(stack.close)
        await proxy.stop()
        await delete_keys(redis_client, f"*{name}*")
