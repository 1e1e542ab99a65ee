"""A config key given as its hash (``key_sha256``) and a composed gateway's key store."""

from __future__ import annotations

from pathlib import Path

from laneway.app.composer import build_gateway
from laneway.config.models import KeyConfig
from laneway.sim import RunningSim
from laneway.state.keys.databases import DEFAULT_PATH, open_key_store
from laneway.state.keys.records import AuditEntry, Digest, KeyRecord, hash_secret
from tests.helpers import unique_spec
from tests.keys.test_stored_lookup import chat, settled
from tests.server.support import config, serve_app, source


def test_key_sha256_is_the_hash_form() -> None:
    digest = hash_secret("sk-1234")
    key = KeyConfig.model_validate({"name": "litellm", "key_sha256": digest})
    assert key.sha256 == digest and key.key is None


async def test_composed_gateway_reads_the_store_beside_the_config(
    sim: RunningSim, tmp_path: Path, http
) -> None:
    lanes = {"a": {"sources": [source(sim, unique_spec(""))]}}
    keys = [{"name": "cfg", "key_sha256": hash_secret("sk-config")}]
    settings = config(
        lanes, keys=keys, admin_keys=[{"name": "ops", "key": "adm"}], key_store_poll=0.05
    )
    store = open_key_store(DEFAULT_PATH, tmp_path)
    await store.open()
    audit = AuditEntry(0.0, "t", "t", "t", None, None)
    await store.put_key(KeyRecord("k", "svc", "p"), audit, [Digest(hash_secret("sk-st"), "k")])
    with serve_app(build_gateway(settings, {}, tmp_path)) as served:
        await settled(http, served, "sk-st", 200)
        assert await chat(http, served, "sk-config") == 200
        assert await chat(http, served, "adm") == 401
    await store.close()
    assert (tmp_path / DEFAULT_PATH).exists()
