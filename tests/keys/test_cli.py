"""``laneway keys create|list|revoke|rotate`` and ``laneway teams ...``: on the key store of a
config directly, and through a gateway's admin API."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from laneway.cli.main import main
from laneway.state.keys.databases import open_key_store
from tests.keys.test_admin_api import served as served_gateway
from tests.server.support import RunningGateway

__all__ = ["served_gateway"]


def write_config(tmp_path: Path) -> Path:
    source = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    config = {
        "lanes": {"a": {"sources": [source]}, "b": {"sources": [source]}},
        "server": {"admin_keys": [{"name": "ops", "key": "os.environ/NOT_NEEDED_HERE"}]},
        "telemetry": {"url": "none"},
    }
    path = tmp_path / "laneway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def audited(tmp_path: Path) -> list[str]:
    store = open_key_store("laneway-keys.sqlite3", tmp_path)
    await store.open()
    try:
        return [entry.action for entry in await store.audit()]
    finally:
        await store.close()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_keys_and_teams_on_the_store(tmp_path: Path, capsys) -> None:
    config = str(write_config(tmp_path))
    assert run(capsys, "teams", "--config", config, "create", "ml", "--lanes", "a")[0] == 0
    status, out, _ = run(
        capsys, "keys", "--config", config, "create", "svc", "--team", "ml", "--budget", "5/day"
    )
    assert status == 0
    secret = out.splitlines()[-1]
    assert secret.startswith("sk-lw-") and "(shown this once)" in out
    status, listed, _ = run(capsys, "keys", "--config", config, "list")
    assert status == 0 and "svc" in listed and "$5/day" in listed and secret not in listed
    assert listed.splitlines()[0].split()[-1] == "last_used_at"
    key_id = listed.splitlines()[1].split()[0]
    status, out, _ = run(capsys, "keys", "--config", config, "rotate", key_id, "--grace", "1h")
    assert status == 0 and out.splitlines()[-1] != secret
    assert run(capsys, "keys", "--config", config, "revoke", key_id)[0] == 0
    assert run(capsys, "teams", "--config", config, "delete", "ml")[0] == 0
    status, _, err = run(capsys, "keys", "--config", config, "create", "x", "--lanes", "zz")
    assert status == 1 and "lanes[0]" in err
    actions = asyncio.run(audited(tmp_path))
    assert actions[0] == "team.delete" and len(actions) == 5
    assert set(actions) >= {"key.create", "key.rotate", "key.delete"}


def test_keys_through_the_admin_api(served_gateway: RunningGateway, capsys, monkeypatch) -> None:
    url = served_gateway.url
    status, _, err = run(capsys, "keys", "--admin-url", url, "list")
    assert status == 1 and "LANEWAY_ADMIN_KEY" in err
    monkeypatch.setenv("LANEWAY_ADMIN_KEY", "adm-secret")
    status, out, _ = run(capsys, "keys", "--admin-url", url, "create", "remote", "--rpm", "3")
    assert status == 0 and out.splitlines()[-1].startswith("sk-lw-")
    status, out, _ = run(capsys, "keys", "--admin-url", url, "list")
    assert status == 0 and "remote" in out
    monkeypatch.setenv("LANEWAY_ADMIN_KEY", "wrong")
    assert run(capsys, "keys", "--admin-url", url, "list")[0] == 1
