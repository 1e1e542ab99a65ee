"""`laneway spend` on both backends: unpriced lanes never read as $0."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from laneway.accounting import Pricer
from laneway.app import build_engine
from laneway.cli.main import main
from laneway.config import load_config
from laneway.core.records import CallMeta
from laneway.core.types import ChatRequest
from laneway.errors import UpstreamFailed
from laneway.http import AiohttpTransport
from laneway.telemetry import writer_for
from tests.helpers import sim_url, unique_spec

REQUEST = ChatRequest([{"role": "user", "content": "hello"}])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def telemetry_url(request: pytest.FixtureRequest) -> str | None:
    """``None`` for the default SQLite file beside the config, else a PostgreSQL URL."""
    if request.param == "sqlite":
        return None
    schemas: Callable[[], str] = request.getfixturevalue("pg_schemas")
    return f"{request.getfixturevalue('pg_dsn')}?schema={schemas()}"


def write_config(sim: Any, tmp_path: Path, url: str | None) -> Path:
    def lane(spec: str, **source: Any) -> dict[str, Any]:
        base = {"base_url": sim_url(sim, unique_spec(spec)), "model": "sim-model"}
        return {"sources": [{**base, **source}]}

    body: dict[str, Any] = {
        "lanes": {
            "paid": lane("ok", price={"input": 2, "output": 8}, name="paid-src"),
            "free": lane("ok"),
            "blind": lane("nousage", price={"input": 2, "output": 8}),
        },
        "server": {"keys": [{"name": "team-a", "key": "sk-test"}]},
    }
    if url is not None:
        body["telemetry"] = {"url": url}
    path = tmp_path / "laneway.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


async def record_calls(path: Path) -> None:
    config, _ = load_config(path)
    writer = writer_for(config.telemetry, path.parent, Pricer.for_lanes(config.lanes).cost)
    assert writer is not None
    engine = build_engine(config, {}, transport=AiohttpTransport(), observers=[writer])
    writer.start()
    for name in config.lanes:
        await engine.chat(name, REQUEST, meta=CallMeta(caller="team-a"))
    await engine.aclose()
    assert (await writer.aclose()).written == 3


def spend(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, list[str]]:
    assert main(["spend", "--config", str(path), *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines}


def test_spend_table(sim, tmp_path: Path, telemetry_url, capsys) -> None:
    path = write_config(sim, tmp_path, telemetry_url)
    asyncio.run(record_calls(path))
    table = spend(path, capsys)
    assert table["lane"][:6] == ["calls", "errors", "prompt", "completion", "reasoning", "cost"]
    assert table["paid"][5].startswith("$") and float(table["paid"][5][1:]) > 0
    assert table["free"][5] == "unpriced" and table["free"][6] == "1"
    assert table["blind"][2:6] == ["n/a", "n/a", "n/a", "n/a"] and table["blind"][7] == "1"
    assert "paid-src" in spend(path, capsys, "--by", "source")
    assert spend(path, capsys, "--by", "key")["team-a"][0] == "3"
    if telemetry_url is None:
        assert (tmp_path / "laneway.sqlite3").exists()


def test_spend_without_a_database_yet(sim, tmp_path: Path, capsys) -> None:
    path = write_config(sim, tmp_path, None)
    assert main(["spend", "--config", str(path), "--since", "1h"]) == 0
    assert "no calls recorded yet" in capsys.readouterr().out


def test_spend_with_telemetry_off(sim, tmp_path: Path, capsys) -> None:
    path = write_config(sim, tmp_path, "none")
    assert main(["spend", "--config", str(path)]) == 1
    assert "telemetry is off" in capsys.readouterr().err


def test_spend_json_by_key_since_days(sim, tmp_path: Path, capsys) -> None:
    path = write_config(sim, tmp_path, None)
    asyncio.run(record_calls(path))
    assert main(["spend", "--config", str(path), "--by", "key", "--since", "1d", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["key"] == "team-a" and row["calls"] == 3 and row["unpriced"] == 1
    assert row["cost_usd"] > 0 and row["usage_unknown"] == 1
    assert main(["spend", "--config", str(path), "--since", "12h", "--json"]) == 0
    lanes = {r["lane"]: r for r in json.loads(capsys.readouterr().out)}
    assert lanes["free"]["cost_usd"] is None and lanes["blind"]["prompt_tokens"] is None


def test_keys_lists_lanes_limits_and_spend_today(sim, tmp_path: Path, capsys) -> None:
    path = write_config(sim, tmp_path, None)
    body = yaml.safe_load(path.read_text())
    body["server"]["keys"].append(
        {
            "name": "capped",
            "key": "os.environ/CAPPED_KEY",
            "lanes": ["paid"],
            "rpm": 60,
            "max_concurrency": 4,
            "budget": {"daily": 20, "monthly": 300},
        }
    )
    path.write_text(yaml.safe_dump(body))
    asyncio.run(record_calls(path))
    assert main(["keys", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "sk-test" not in out
    assert "(3 calls)" in lines["team-a"] and ">=$" in lines["team-a"]
    capped = lines["capped"]
    assert "$CAPPED_KEY" in capped and "paid" in capped and "$0 (no calls)" in capped
    assert "rpm 60, max_concurrency 4, $20/day, $300/month" in capped


def test_check_names_unpriced_lanes_of_budgeted_keys(sim, tmp_path: Path, capsys) -> None:
    path = write_config(sim, tmp_path, None)
    body = yaml.safe_load(path.read_text())
    body["server"]["keys"] += [
        {"name": "budgeted", "key": "k1", "budget": {"daily": 5}},
        {"name": "lenient", "key": "k2", "budget": {"daily": 5}, "allow_unpriced": True},
    ]
    path.write_text(yaml.safe_dump(body))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: server.keys: key budgeted has a budget but lane free has unpriced" in out
    assert "lenient" not in out and "lane paid" not in out


def test_a_key_whose_only_failure_no_upstream_answered_has_a_known_spend(
    sim, tmp_path: Path, capsys
) -> None:
    """Issue 23 defect 14: one 500 among priced calls made the key's spend read >= $..."""
    path = write_config(sim, tmp_path, None)
    body = yaml.safe_load(path.read_text())
    paid = body["lanes"]["paid"]["sources"][0]
    body["lanes"] = {
        "paid": body["lanes"]["paid"],
        "down": {"sources": [{**paid, "base_url": sim_url(sim, unique_spec("status=500"))}]},
    }
    path.write_text(yaml.safe_dump(body))
    asyncio.run(record_some(path))
    assert main(["keys", "--config", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("team-a"))
    assert "(2 calls)" in line and ">=" not in line


async def record_some(path: Path) -> None:
    config, _ = load_config(path)
    writer = writer_for(config.telemetry, path.parent, Pricer.for_lanes(config.lanes).cost)
    assert writer is not None
    engine = build_engine(config, {}, transport=AiohttpTransport(), observers=[writer])
    writer.start()
    await engine.chat("paid", REQUEST, meta=CallMeta(caller="team-a"))
    with pytest.raises(UpstreamFailed):
        await engine.chat("down", REQUEST, meta=CallMeta(caller="team-a"))
    await engine.aclose()
    assert (await writer.aclose()).written == 2
