"""Stored keys answer on a gateway once its poll of the store's version has read them;
blocked, expired, deleted keys and rotated-out secrets are refused; limits apply."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.http import AiohttpTransport
from laneway.server.stored_keys import StoredKeys
from laneway.sim import RunningSim
from laneway.state.keys.databases import open_key_store
from laneway.state.keys.records import (
    AuditEntry,
    Digest,
    KeyRecord,
    Limits,
    TeamRecord,
    hash_secret,
)
from laneway.state.keys.store import KeyStore
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, config, post, serve_app, source

AUDIT = AuditEntry(0.0, "test", "test", "test", None, None)


@pytest.fixture
def served(sim: RunningSim, tmp_path: Path) -> Iterator[RunningGateway]:
    lanes = {name: {"sources": [source(sim, unique_spec(""))]} for name in ("a", "b")}
    settings = config(lanes, key_store=str(tmp_path / "keys.sqlite3"), key_store_poll=0.05)
    engine = build_engine(settings, {}, transport=AiohttpTransport())
    store = open_key_store(str(tmp_path / "keys.sqlite3"), tmp_path)
    stored = StoredKeys(store, list(engine.lanes), {}, poll=0.05)
    with serve_app(gateway_over(settings, engine, {}, stored=stored)) as running:
        yield running


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[KeyStore]:
    opened = open_key_store(str(tmp_path / "keys.sqlite3"), tmp_path)
    await opened.open()
    yield opened
    await opened.close()


async def chat(http: aiohttp.ClientSession, gw: RunningGateway, key: str, lane: str = "a") -> int:
    headers = {"Authorization": f"Bearer {key}"}
    body = {"model": lane, "messages": HELLO}
    status, _, _ = await post(http, f"{gw.v1}/chat/completions", body, **headers)
    return status


async def settled(http: aiohttp.ClientSession, gw: RunningGateway, key: str, want: int) -> None:
    """Wait (2 s at most, the propagation bound) until ``key`` gets ``want``."""
    deadline = time.monotonic() + 2.0
    while (status := await chat(http, gw, key)) != want:
        assert time.monotonic() < deadline, f"still {status}, not {want}, after 2 s"


async def put(store: KeyStore, record: KeyRecord, secret: str) -> None:
    await store.put_key(record, AUDIT, [Digest(hash_secret(secret), record.id)])


async def test_created_key_answers_and_blocked_key_is_refused(served, store, http) -> None:
    assert await chat(http, served, "sk-lw-one") == 401
    await put(store, KeyRecord("k1", "one", "sk-lw-one"), "sk-lw-one")
    await settled(http, served, "sk-lw-one", 200)
    await store.put_key(KeyRecord("k1", "one", "sk-lw-one", blocked=True), AUDIT)
    await settled(http, served, "sk-lw-one", 401)


async def test_expired_deleted_and_rotated_out_are_refused(served, store, http) -> None:
    await put(store, KeyRecord("k1", "old", "p", expires_at=time.time() - 1), "sk-lw-old")
    await put(store, KeyRecord("k2", "live", "p"), "sk-lw-live")
    await settled(http, served, "sk-lw-live", 200)
    assert await chat(http, served, "sk-lw-old") == 401
    new = Digest(hash_secret("sk-lw-new"), "k2")
    await store.rotate(KeyRecord("k2", "live", "q"), new, time.time() - 1, AUDIT)
    await settled(http, served, "sk-lw-new", 200)
    assert await chat(http, served, "sk-lw-live") == 401
    await store.delete_key("k2", AUDIT)
    await settled(http, served, "sk-lw-new", 401)


async def test_lanes_limits_and_team_block(served, store, http) -> None:
    await store.put_team(TeamRecord("ml"), AUDIT)
    limits = Limits(("a",), rpm=1)
    await put(store, KeyRecord("k1", "only-a", "p", team="ml", limits=limits), "sk-lw-a")
    await settled(http, served, "sk-lw-a", 200)
    assert await chat(http, served, "sk-lw-a", "b") == 403
    assert await chat(http, served, "sk-lw-a") == 429
    await store.put_team(TeamRecord("ml", blocked=True), AUDIT)
    await settled(http, served, "sk-lw-a", 401)
