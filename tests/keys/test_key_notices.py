"""Key store changes announced through Redis pub/sub: a replica hears another's change at
once, not at its next poll; with Redis cut the poll alone still carries it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import yaml
from redis.asyncio import Redis

from laneway.cli.main import main
from laneway.server.stored_keys import StoredKeys
from laneway.state.keys.databases import open_key_store
from laneway.state.keys.notices import RedisKeyNotices
from laneway.state.keys.records import AuditEntry, Digest, KeyRecord, hash_secret
from tests.proxy import TcpProxy
from tests.server.support import wait_until
from tests.state.conftest import redis_client, redis_prefix
from tests.state.test_fallback import proxy

__all__ = ["proxy", "redis_client", "redis_prefix"]

AUDIT = AuditEntry(0.0, "test", "test", "test", None, None)
SECRET = "sk-lw-noticed"
DIGEST = bytes.fromhex(hash_secret(SECRET))
NEVER = 3600.0
"""A poll that never comes within a test: only a notice can carry a change."""


def replica(store_url: str, tmp_path: Path, port: int, prefix: str, poll: float) -> StoredKeys:
    notices = RedisKeyNotices.from_url(f"redis://127.0.0.1:{port}/0", prefix=prefix)
    return StoredKeys(open_key_store(store_url, tmp_path), ["a"], poll=poll, notices=notices)


async def subscribed(client: Redis, channel: str, count: int) -> None:
    async def listeners() -> int:
        [(_, found)] = await client.pubsub_numsub(channel)
        return int(found)

    for _ in range(2000):
        if await listeners() >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"fewer than {count} replicas subscribed to {channel}")


async def test_a_change_is_heard_on_the_other_replica_without_its_poll(
    store_url: str, tmp_path: Path, redis_client: Redis, redis_prefix: str, proxy: TcpProxy
) -> None:
    one = replica(store_url, tmp_path, proxy.port, redis_prefix, NEVER)
    two = replica(store_url, tmp_path, proxy.port, redis_prefix, NEVER)
    try:
        for stored in (one, two):
            stored.start()
            await stored.ready()
        await subscribed(redis_client, f"{redis_prefix}:keys:changed", 2)
        record = KeyRecord("k1", "heard", "sk-lw-noti")
        await one.store.put_key(record, AUDIT, [Digest(hash_secret(SECRET), "k1")])
        await one.changed()
        assert one.caller(DIGEST) is not None
        await wait_until(lambda: two.caller(DIGEST) is not None, timeout=10.0)
        await one.store.put_key(KeyRecord("k1", "heard", "p", blocked=True), AUDIT)
        await one.changed()
        await wait_until(lambda: two.caller(DIGEST) is None, timeout=10.0)
    finally:
        await one.aclose()
        await two.aclose()


async def test_with_redis_cut_the_poll_carries_a_revocation_and_notices_resume(
    store_url: str,
    tmp_path: Path,
    redis_client: Redis,
    redis_prefix: str,
    proxy: TcpProxy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="laneway.keys")
    one = replica(store_url, tmp_path, proxy.port, redis_prefix, NEVER)
    two = replica(store_url, tmp_path, proxy.port, redis_prefix, 0.1)
    try:
        record = KeyRecord("k1", "cut", "sk-lw-noti")
        await one.store.open()
        await one.store.put_key(record, AUDIT, [Digest(hash_secret(SECRET), "k1")])
        for stored in (one, two):
            stored.start()
            await stored.ready()
        await subscribed(redis_client, f"{redis_prefix}:keys:changed", 2)
        await proxy.stop()
        await one.store.put_key(KeyRecord("k1", "cut", "p", blocked=True), AUDIT)
        await one.changed()  # the notice cannot go out: logged, and the store has the change
        await wait_until(lambda: two.caller(DIGEST) is None, timeout=10.0)
        await proxy.start()
        await subscribed(redis_client, f"{redis_prefix}:keys:changed", 2)
        await one.store.put_key(record, AUDIT)
        await one.changed()
        await wait_until(lambda: two.caller(DIGEST) is not None, timeout=10.0)
    finally:
        await one.aclose()
        await two.aclose()
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("key store change not announced through Redis") for m in messages)
    assert sum(m.startswith("key store notices unheard") for m in messages) == 2, "once each"
    assert sum(m == "key store notices heard again through Redis" for m in messages) == 2


async def test_laneway_keys_against_the_store_announces_its_change(
    tmp_path: Path,
    redis_client: Redis,
    proxy: TcpProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    config = {
        "lanes": {"a": {"sources": [source]}},
        "server": {"key_store": "keys.sqlite3"},
        "state": {"url": f"redis://127.0.0.1:{proxy.port}/0"},
        "telemetry": {"url": "none"},
    }
    (tmp_path / "laneway.yaml").write_text(yaml.safe_dump(config))
    listening = replica(str(tmp_path / "keys.sqlite3"), tmp_path, proxy.port, "laneway", NEVER)
    try:
        listening.start()
        await listening.ready()
        await subscribed(redis_client, "laneway:keys:changed", 1)
        args = ["keys", "--config", str(tmp_path / "laneway.yaml"), "create", "cli"]
        assert await asyncio.to_thread(main, args) == 0
        secret = capsys.readouterr().out.splitlines()[-1]
        digest = bytes.fromhex(hash_secret(secret))
        await wait_until(lambda: listening.caller(digest) is not None, timeout=10.0)
    finally:
        await listening.aclose()
