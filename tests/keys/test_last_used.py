"""When a stored key was last used: stamped at the store's poll, written in batches, never a
write per call; the latest use any replica wrote wins; listed by the admin API."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import aiohttp
import pytest

from laneway.app.composer import build_gateway
from laneway.server.stored_keys import StoredKeys
from laneway.sim import RunningSim
from laneway.state.keys.records import AuditEntry, Digest, KeyRecord
from laneway.state.keys.store import KeyStore
from tests.helpers import unique_spec
from tests.keys.admin_support import admin
from tests.server.support import HELLO, RunningGateway, config, post, serve_app, source

AUDIT = AuditEntry(0.0, "test", "test", "test", None, None)


async def test_the_latest_use_wins_and_use_is_no_change_of_the_keys(store: KeyStore) -> None:
    await store.put_key(KeyRecord("k1", "one", "p"), AUDIT, [Digest("ab" * 32, "k1")])
    version = await store.version()
    await store.mark_used({"k1": 200.0})
    await store.mark_used({"k1": 100.0})  # another replica's older stamp
    assert await store.last_used() == {"k1": 200.0}
    assert await store.version() == version, "no replica reloads for a use"
    assert await store.audit() == [AUDIT], "and no audit row"
    await store.delete_key("k1", AUDIT)
    assert await store.last_used() == {}


async def test_a_call_writes_nothing_and_its_use_is_written_in_one_batch(
    store: KeyStore,
) -> None:
    writes: list[dict[str, float]] = []
    mark_used = store.mark_used

    async def counted(used: Mapping[str, float]) -> None:
        writes.append(dict(used))
        await mark_used(used)

    store.mark_used = counted  # type: ignore[method-assign]
    for n in range(3):
        await store.put_key(KeyRecord(f"k{n}", f"n{n}", "p"), AUDIT, [Digest(f"{n}" * 64, f"k{n}")])
    stored = StoredKeys(store, ["a"], poll=60.0)
    await stored.refresh()
    for _ in range(1000):
        for n in range(2):
            assert stored.caller(bytes.fromhex(f"{n}" * 64)) is not None
    assert writes == [], "the request path wrote nothing"
    before = time.time()
    used = await stored.use()
    assert len(writes) == 1 and sorted(writes[0]) == ["k0", "k1"]
    assert sorted(used) == ["k0", "k1"] and used["k0"] >= before


@pytest.fixture
def served(sim: RunningSim, tmp_path: Path) -> Iterator[RunningGateway]:
    lanes = {"a": {"sources": [source(sim, unique_spec(""))]}}
    settings = config(lanes, admin_keys=[{"name": "ops", "key": "adm-secret"}])
    with serve_app(build_gateway(settings, {}, tmp_path)) as running:
        yield running


async def test_the_admin_api_lists_when_each_key_was_last_used(
    served: RunningGateway, http: aiohttp.ClientSession
) -> None:
    made = [(await admin(http, served.url, "POST", "/admin/keys", {"name": n}))[1] for n in "xy"]
    _, listed = await admin(http, served.url, "GET", "/admin/keys")
    assert [k["last_used_at"] for k in listed] == [None, None]
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    headers = {"Authorization": f"Bearer {made[0]['key']}"}
    body = {"model": "a", "messages": HELLO}
    assert (await post(http, f"{served.v1}/chat/completions", body, **headers))[0] == 200
    _, listed = await admin(http, served.url, "GET", "/admin/keys")
    used = {k["name"]: k["last_used_at"] for k in listed}
    assert used["y"] is None
    assert dt.datetime.fromisoformat(used["x"]) >= before
    _, one = await admin(http, served.url, "GET", f"/admin/keys/{made[0]['id']}")
    assert one["last_used_at"] == used["x"]
