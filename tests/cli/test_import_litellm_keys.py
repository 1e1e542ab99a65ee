"""``laneway import litellm CONFIG --database URL``: a LiteLLM shop's keys keep working.

LiteLLM's proxy database is a PostgreSQL schema of the test's own, built from the
columns of LiteLLM's schema (``tests.cli.litellm_database`` cites the source) and
dropped after. The import writes laneway.yaml and the key store beside it; the
gateway built from that file then answers each caller's unchanged ``sk-...`` key
with the limits LiteLLM gave it: its rpm, its budget with the spend LiteLLM
counted, its expiry and blocking, its models as lanes, its team's limits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import pytest
import yaml

from laneway.app.composer import build_gateway
from laneway.cli.import_keys import shown, store_setting
from laneway.cli.main import main
from laneway.config import parse_config
from laneway.config.load import load_config
from laneway.sim import RunningSim
from laneway.state.keys.databases import open_key_store
from tests.cli.litellm_database import create, hash_token, insert
from tests.helpers import sim_url, unique_spec
from tests.server.conftest import http
from tests.server.support import HELLO, RunningGateway, post, serve_app
from tests.status.support import status_json
from tests.telemetry.conftest import pg_dsn, pg_schemas

__all__ = ["http", "pg_dsn", "pg_schemas"]

ENV = {"SIM_KEY": "sim-key"}
NOW = datetime.now(UTC).replace(tzinfo=None)
PRICE = {"input_cost_per_token": 0.001, "output_cost_per_token": 0.002}
"""A dollar a thousand tokens: a hello's estimate is cents, so budgets bite at once."""


def litellm_config(sim: RunningSim) -> dict[str, Any]:
    """Two model groups at the simulator, priced, and an alias of the first."""
    base = sim_url(sim, unique_spec(""))
    params = {"api_base": base, "api_key": "os.environ/SIM_KEY"}
    return {
        "model_list": [
            {
                "model_name": name,
                "litellm_params": {"model": f"openai/{name}", **params},
                "model_info": PRICE,
            }
            for name in ("gpt-4o", "claude-haiku")
        ],
        "router_settings": {"model_group_alias": {"gpt4": "gpt-4o"}},
    }


TEAMS = [
    {"team_id": "t-ml", "team_alias": "ml", "models": ["claude-haiku"], "rpm_limit": 1},
    {"team_id": "t-off", "team_alias": "off", "blocked": True},
    {
        "team_id": "t-fin",
        "team_alias": "fin",
        "max_budget": 1.0,
        "budget_duration": "30d",
        "budget_reset_at": NOW + timedelta(days=9),
        "spend": 0.9995,
    },
]
KEYS: list[dict[str, Any]] = [
    {"secret": "sk-rpm-AAAA", "key_alias": "svc-rpm", "rpm_limit": 2},
    {"secret": "sk-spent-BBBB", "key_alias": "spent", "max_budget": 1.0},
    {"secret": "sk-fresh-CCCC", "key_alias": "fresh", "max_budget": 1.0},
    {"secret": "sk-old-DDDD", "key_alias": "old", "expires": NOW - timedelta(days=1)},
    {"secret": "sk-block-EEEE", "key_alias": "blocked", "blocked": True},
    {"secret": "sk-alias-FFFF", "key_alias": "alias", "models": ["gpt4"]},
    {"secret": "sk-team-GGGG", "key_alias": "teamed", "team_id": "t-ml"},
    {"secret": "sk-off-HHHH", "key_alias": "in-blocked-team", "team_id": "t-off"},
    {"secret": "sk-none-IIII", "key_alias": "lost", "models": ["rerank-v3"]},
    {"secret": "sk-fin-JJJJ", "key_alias": "fin-key", "team_id": "t-fin"},
]
SPENT = 0.9995
"""What ``spent`` has spent of its $1 this month: a hello's estimate does not fit in the rest."""


def key_rows() -> list[dict[str, Any]]:
    rows = []
    for key in KEYS:
        row = {k: v for k, v in key.items() if k != "secret"}
        row |= {"token": hash_token(key["secret"]), "key_name": f"sk-...{key['secret'][-4:]}"}
        if row.get("max_budget"):
            row |= {"budget_duration": "30d", "budget_reset_at": NOW + timedelta(days=9)}
        if row["key_alias"] == "spent":
            row["spend"] = SPENT
        rows.append(row)
    return rows


@pytest.fixture
def litellm_db(pg_dsn: str, pg_schemas: Callable[[], str]) -> str:
    """A LiteLLM database's URL, with ``KEYS`` and ``TEAMS`` in it."""
    schema = pg_schemas()

    async def build() -> None:
        await create(pg_dsn, schema)
        await insert(pg_dsn, schema, "LiteLLM_TeamTable", TEAMS)
        await insert(pg_dsn, schema, "LiteLLM_VerificationToken", key_rows())

    asyncio.run(build())
    return f"{pg_dsn}?schema={schema}"


def run_import(tmp_path: Path, sim: RunningSim, database: str, *extra: str) -> tuple[int, Path]:
    source = tmp_path / "litellm.yaml"
    source.write_text(yaml.safe_dump(litellm_config(sim)))
    out = tmp_path / "laneway.yaml"
    status = main(
        ["import", "litellm", str(source), "--database", database, "-o", str(out), *extra]
    )
    return status, out


@pytest.fixture
def imported(
    tmp_path: Path, sim: RunningSim, litellm_db: str, capsys: pytest.CaptureFixture[str]
) -> Iterator[tuple[int, Path, str]]:
    status, out = run_import(tmp_path, sim, litellm_db)
    captured = capsys.readouterr()
    yield status, out, captured.out + captured.err


@pytest.fixture
def served(imported: tuple[int, Path, str]) -> Iterator[RunningGateway]:
    _, out, _ = imported
    (out.parent / ".env").write_text("".join(f"{k}={v}\n" for k, v in ENV.items()))
    config, environ = load_config(out)
    with serve_app(build_gateway(config, environ, out.parent)) as running:
        yield running


async def chat(
    http: aiohttp.ClientSession, gw: RunningGateway, secret: str, model: str = "gpt-4o"
) -> tuple[int, Any]:
    body = {"model": model, "messages": HELLO, "max_tokens": 5}
    status, _, answer = await post(
        http, f"{gw.v1}/chat/completions", body, Authorization=f"Bearer {secret}"
    )
    return status, answer


async def answering(http: aiohttp.ClientSession, gw: RunningGateway, secret: str) -> int:
    """The first status that is not the 401 of a store not yet read (2 s at most)."""
    deadline = time.monotonic() + 2.0
    while (status := (await chat(http, gw, secret))[0]) == 401:
        assert time.monotonic() < deadline, "the imported key was not read in 2 s"
    return status


async def test_unchanged_litellm_keys_answer_with_their_limits(
    served: RunningGateway, http: aiohttp.ClientSession
) -> None:
    assert await answering(http, served, "sk-rpm-AAAA") == 200
    assert (await chat(http, served, "sk-rpm-AAAA"))[0] == 200
    status, answer = await chat(http, served, "sk-rpm-AAAA")
    assert status == 429, answer
    assert "rpm" in answer["error"]["message"]

    assert (await chat(http, served, "sk-fresh-CCCC"))[0] == 200
    status, answer = await chat(http, served, "sk-spent-BBBB")
    assert status == 429, answer
    assert "monthly_budget" in answer["error"]["code"] or "budget" in answer["error"]["message"]
    assert f"${SPENT:.6f}" in answer["error"]["message"]  # LiteLLM's spend, carried

    assert (await chat(http, served, "sk-old-DDDD"))[0] == 401
    assert (await chat(http, served, "sk-block-EEEE"))[0] == 401
    assert (await chat(http, served, "sk-off-HHHH"))[0] == 401

    assert (await chat(http, served, "sk-alias-FFFF", "gpt4"))[0] == 200
    assert (await chat(http, served, "sk-alias-FFFF", "gpt-4o"))[0] == 200
    assert (await chat(http, served, "sk-alias-FFFF", "claude-haiku"))[0] == 403

    assert (await chat(http, served, "sk-team-GGGG", "gpt-4o"))[0] == 403
    assert (await chat(http, served, "sk-team-GGGG", "claude-haiku"))[0] == 200
    assert (await chat(http, served, "sk-team-GGGG", "claude-haiku"))[0] == 429  # team's rpm 1

    assert (await chat(http, served, "sk-none-IIII"))[0] == 403

    status, answer = await chat(http, served, "sk-fin-JJJJ")  # its team's spend, carried
    assert status == 429, answer
    assert answer["error"]["code"] == "team_monthly_budget_exceeded"
    assert f"${SPENT:.6f}" in answer["error"]["message"]

    budgets = (await status_json(http, served, {"Authorization": "Bearer sk-rpm-AAAA"}))["budgets"]
    rows = {(row["owner"], row["name"]): row for row in budgets}
    assert rows[("team", "fin")]["spent_usd"] == SPENT  # LiteLLM's spend, on the status page
    assert rows[("key", "spent")]["spent_usd"] == SPENT
    assert (await chat(http, served, "sk-never-issued"))[0] == 401


def test_the_import_reports_what_it_did_not_carry_and_prints_no_secret(
    imported: tuple[int, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, printed = imported
    assert status == 1  # a model of key "lost" maps to no lane
    text = printed + out.read_text()
    assert "not carried: model rerank-v3 (no model group, alias or access group" in printed
    assert "key lost" in printed
    assert "imported 10 key(s) and 3 team(s) into laneway-keys.sqlite3" in printed
    for key in KEYS:
        secret, digest = key["secret"], hash_token(key["secret"])
        assert secret[:-4] not in text  # only LiteLLM's display form, sk-...AAAA
        assert all(digest[i : i + 8] not in text for i in range(0, 57))
    config = yaml.safe_load(out.read_text())
    assert config["server"]["key_store"] == "laneway-keys.sqlite3"
    assert (out.parent / "laneway-keys.sqlite3").exists()
    monkeypatch.setenv("SIM_KEY", ENV["SIM_KEY"])
    assert main(["check", str(out)]) == 0


async def test_importing_again_updates_the_same_keys(
    imported: tuple[int, Path, str], tmp_path: Path, sim: RunningSim, litellm_db: str
) -> None:
    _, out, _ = imported
    store = open_key_store(str(out.parent / "laneway-keys.sqlite3"), out.parent)
    before = await store.snapshot()
    await asyncio.to_thread(run_import, tmp_path, sim, litellm_db)
    after = await store.snapshot()
    await store.close()
    assert sorted(after.keys) == sorted(before.keys)
    assert len(after.digests) == len(before.digests) == len(KEYS)
    spent = next(k for k in after.keys.values() if k.name == "spent")
    assert spent.spend == SPENT and spent.prefix == "sk-...BBBB"
    assert spent.limits.budget == 1.0 and spent.limits.period == "month"


def test_an_unreachable_database_is_named_without_its_password(
    tmp_path: Path, sim: RunningSim, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://litellm:hunter2-secret@127.0.0.1:1/litellm"
    status, out = run_import(tmp_path, sim, url)
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert "cannot connect to postgresql://litellm:***@127.0.0.1:1/litellm" in err
    assert "hunter2" not in err
    assert not (tmp_path / "laneway-keys.sqlite3").exists()


def test_a_database_without_litellms_tables_is_refused(
    tmp_path: Path,
    sim: RunningSim,
    pg_dsn: str,
    pg_schemas: Callable[[], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = pg_schemas()
    asyncio.run(create(pg_dsn, schema, tables=False))
    status, out = run_import(tmp_path, sim, f"{pg_dsn}?schema={schema}")
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert f"schema '{schema}' has no LiteLLM_VerificationToken, LiteLLM_TeamTable" in err


async def test_keys_go_to_a_postgresql_store_whose_password_stays_out_of_the_file(
    tmp_path: Path,
    sim: RunningSim,
    litellm_db: str,
    pg_dsn: str,
    pg_schemas: Callable[[], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    parts = urlsplit(pg_dsn)
    netloc = f"{parts.username}:not-needed@{parts.hostname}:{parts.port or 5432}"
    store_url = urlunsplit(parts._replace(netloc=netloc, query=f"schema={pg_schemas()}"))
    status, out = await asyncio.to_thread(
        run_import, tmp_path, sim, litellm_db, "--key-store", store_url
    )
    printed = capsys.readouterr().err + out.read_text()
    assert status == 1 and "not-needed" not in printed
    written = yaml.safe_load(out.read_text())["server"]["key_store"]
    assert "${LANEWAY_KEY_STORE_PASSWORD}@" in written
    loaded = parse_config(out.read_text(), environ={**ENV, "LANEWAY_KEY_STORE_PASSWORD": "pw"})
    assert loaded.server.key_store == written.replace("${LANEWAY_KEY_STORE_PASSWORD}", "pw")
    store = open_key_store(store_url, tmp_path)
    snapshot = await store.snapshot()
    await store.close()
    assert {k.name for k in snapshot.keys.values()} == {k["key_alias"] for k in KEYS}
    assert {t.name: t.spend for t in snapshot.teams.values()} == {"ml": 0, "off": 0, "fin": SPENT}
    actions = {e.action for e in await _audit(store_url, tmp_path)}
    assert actions == {"key.import", "team.import"}


async def _audit(url: str, base: Path) -> list[Any]:
    store = open_key_store(url, base)
    try:
        return await store.audit(limit=100)
    finally:
        await store.close()


def test_the_store_setting_keeps_passwords_out_and_paths_where_the_config_is(
    tmp_path: Path,
) -> None:
    url = "postgresql://lw:s3cret@db.internal:5433/keys?schema=lw"
    setting, needed = store_setting(url, tmp_path)
    assert (
        setting == "postgresql://lw:${LANEWAY_KEY_STORE_PASSWORD}@db.internal:5433/keys?schema=lw"
    )
    assert set(needed) == {"LANEWAY_KEY_STORE_PASSWORD"}
    assert store_setting("keys.sqlite3", tmp_path) == ("keys.sqlite3", {})
    assert store_setting("keys.sqlite3", None)[0] == str(Path("keys.sqlite3").resolve())
    assert shown(url) == "postgresql://lw:***@db.internal:5433/keys?schema=lw"


def test_a_key_store_without_a_database_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "litellm.yaml"
    source.write_text(yaml.safe_dump({"model_list": []}))
    with pytest.raises(SystemExit) as stopped:
        main(["import", "litellm", str(source), "--key-store", "k.sqlite3"])
    assert stopped.value.code == 2
    assert "--key-store and --dry-run need --database" in capsys.readouterr().err


def test_a_dry_run_reports_and_writes_nothing(
    tmp_path: Path, sim: RunningSim, litellm_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run_import(tmp_path, sim, litellm_db, "--dry-run")
    err = capsys.readouterr().err
    assert status == 1 and "not carried: model rerank-v3" in err
    assert "dry run: 10 key(s) and 3 team(s) read; nothing written" in err
    assert not out.exists() and not (tmp_path / "laneway-keys.sqlite3").exists()
