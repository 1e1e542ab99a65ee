"""The key store on SQLite and PostgreSQL: records round trip, every change audited and
versioned, rotation keeps the old digest for its grace, deletion removes the digests."""

from __future__ import annotations

from pathlib import Path

from laneway.state.keys.databases import open_key_store
from laneway.state.keys.records import (
    AuditEntry,
    Digest,
    KeyRecord,
    Limits,
    TeamRecord,
    hash_secret,
    new_secret,
    visible_prefix,
)
from laneway.state.keys.store import KeyStore


def entry(action: str, target: str, after: dict[str, object] | None = None) -> AuditEntry:
    return AuditEntry(1000.0, "ops", action, target, None, after)


def test_secrets_hash_as_litellm_stores_them() -> None:
    secret = new_secret()
    assert secret.startswith("sk-lw-") and len(secret) > 40
    # LiteLLM's hash_token (litellm/proxy/_types.py): sha256(token.encode()).hexdigest()
    assert hash_secret("sk-1234") == (
        "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
    )
    assert visible_prefix(secret) == secret[:10] and new_secret() != secret


async def test_keys_and_teams_round_trip(store: KeyStore) -> None:
    team = TeamRecord("ml", Limits(("a",), rpm=100, budget=50.0, period="month"), created_at=1.0)
    await store.put_team(team, entry("team.create", "ml"))
    key = KeyRecord(
        "k1",
        "svc",
        "sk-lw-abcd",
        team="ml",
        limits=Limits(("a",), rpm=10, tpm=1000, max_concurrency=2, budget=5.0, period="day"),
        expires_at=2000.0,
        metadata={"owner": "x"},
        created_at=1.0,
        spend=1.5,
    )
    await store.put_key(key, entry("key.create", "k1"), [Digest("ab" * 32, "k1")])
    snap = await store.snapshot()
    assert snap.version == 2
    assert snap.keys == {"k1": key} and snap.teams == {"ml": team}
    assert snap.digests == (Digest("ab" * 32, "k1"),)
    blocked = KeyRecord("k1", "svc", "sk-lw-abcd", blocked=True)
    await store.put_key(blocked, entry("key.update", "k1"))
    assert (await store.snapshot()).keys["k1"] == blocked
    assert await store.version() == 3


async def test_rotation_grace_and_deletion(store: KeyStore) -> None:
    await store.put_key(
        KeyRecord("k1", "svc", "p"), entry("key.create", "k1"), [Digest("aa" * 32, "k1")]
    )
    key = KeyRecord("k1", "svc", "q")
    await store.rotate(key, Digest("bb" * 32, "k1"), 1500.0, entry("key.rotate", "k1"))
    digests = {d.sha256: d.valid_until for d in (await store.snapshot()).digests}
    assert digests == {"aa" * 32: 1500.0, "bb" * 32: None}
    await store.delete_key("k1", entry("key.delete", "k1"))
    snap = await store.snapshot()
    assert snap.keys == {} and snap.digests == ()
    actions = [a.action for a in await store.audit()]
    assert sorted(actions) == ["key.create", "key.delete", "key.rotate"]


async def test_audit_keeps_before_and_after(store: KeyStore) -> None:
    audit = AuditEntry(5.0, "ops", "team.update", "ml", {"rpm": 1}, {"rpm": 2})
    await store.put_team(TeamRecord("ml"), audit)
    assert await store.audit() == [audit]


async def test_opening_twice_keeps_the_store(
    store: KeyStore, store_url: str, tmp_path: Path
) -> None:
    await store.put_team(TeamRecord("ml"), entry("team.create", "ml"))
    again = open_key_store(store_url, tmp_path)
    await again.open()
    try:
        assert list((await again.snapshot()).teams) == ["ml"]
    finally:
        await again.close()
