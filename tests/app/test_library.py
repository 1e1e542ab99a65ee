"""The library is the product the server is: telemetry rows, metrics and a cost on every reply."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from laneway import Laneway
from laneway.config.models import LanewayConfig
from tests.helpers import one_lane, sim_url, unique_spec

PRICE = {"input": 1.0, "output": 4.0}
"""USD per million tokens: the simulator's answers cost a few millionths of a dollar."""


def write_config(folder: Path, body: dict[str, Any]) -> Path:
    path = folder / "laneway.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def priced_lane(sim: Any, spec: str, kind: str = "chat") -> dict[str, Any]:
    source = {"base_url": sim_url(sim, unique_spec(spec)), "model": "sim-model", "price": PRICE}
    return {"kind": kind, "sources": [source]}


def rows(db: Path) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return list(conn.execute("SELECT * FROM calls ORDER BY time"))


async def test_from_config_writes_a_row_beside_the_config_and_prices_every_reply(
    sim, tmp_path
) -> None:
    lanes = {"chat": priced_lane(sim, "ok"), "vectors": priced_lane(sim, "ok", "embed")}
    path = write_config(tmp_path, {"lanes": lanes})
    async with Laneway.from_config(path) as lw:
        answer = await lw.chat("chat", [{"role": "user", "content": "hi"}])
        vectors = await lw.embed("vectors", ["one", "two"])
        stream = lw.chat_stream("chat", [{"role": "user", "content": "hi"}])
        async for _ in stream:
            pass
    usage = answer.usage
    assert usage.prompt_tokens is not None and usage.completion_tokens is not None
    expected = Decimal(repr((usage.prompt_tokens * 1.0 + usage.completion_tokens * 4.0) / 1e6))
    assert (answer.cost, answer.cost_unknown) == (expected, None)
    assert vectors.cost is not None and vectors.cost > 0 and vectors.cost_unknown is None
    assert stream.cost is not None and stream.cost > 0 and stream.cost_unknown is None
    written = rows(tmp_path / "laneway.sqlite3")
    assert [(r["lane"], r["kind"], r["outcome"]) for r in written] == [
        ("chat", "chat", "ok"),
        ("vectors", "embed", "ok"),
        ("chat", "chat", "ok"),
    ]
    assert Decimal(repr(round(written[0]["cost_usd"], 12))) == answer.cost
    assert lw.metrics.counts[("laneway_requests", ("chat", "openai:sim-model", "ok"))] == 2


async def test_an_unknown_cost_says_why(sim) -> None:
    unpriced = one_lane(sim, unique_spec("ok"))
    async with Laneway.from_settings(unpriced, environ={}) as lw:
        answer = await lw.chat("lane", [{"role": "user", "content": "hi"}])
    assert (answer.cost, answer.cost_unknown) == (None, "unpriced model")
    no_usage = one_lane(sim, unique_spec("nousage"))
    async with Laneway.from_settings(no_usage, environ={}) as lw:
        answer = await lw.chat("lane", [{"role": "user", "content": "hi"}])
    assert (answer.cost, answer.cost_unknown) == (None, "usage unknown")


async def test_a_cache_hit_costs_nothing(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), cache={"ttl": "1h"})
    async with Laneway.from_settings(config, environ={}) as lw:
        await lw.chat("lane", [{"role": "user", "content": "hi"}])
        hit = await lw.chat("lane", [{"role": "user", "content": "hi"}])
    assert (hit.cache, hit.cost, hit.cost_unknown) == ("hit", Decimal("0.0"), None)


async def test_telemetry_none_writes_nothing(sim, tmp_path) -> None:
    lanes = {"chat": priced_lane(sim, "ok")}
    path = write_config(tmp_path, {"lanes": lanes, "telemetry": {"url": "none"}})
    async with Laneway.from_config(path) as lw:
        assert lw.telemetry is None
        await lw.chat("chat", [{"role": "user", "content": "hi"}])
    assert not (tmp_path / "laneway.sqlite3").exists()


async def test_a_config_built_in_code_records_only_when_it_declares_telemetry(
    sim, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    quiet = LanewayConfig.model_validate({"lanes": {"chat": priced_lane(sim, "ok")}})
    assert Laneway.from_settings(quiet, environ={}).telemetry is None
    declared = {"lanes": {"chat": priced_lane(sim, "ok")}, "telemetry": {"url": "calls.sqlite3"}}
    async with Laneway.from_settings(LanewayConfig.model_validate(declared), environ={}) as lw:
        await lw.chat("chat", [{"role": "user", "content": "hi"}])
    assert [r["lane"] for r in rows(tmp_path / "calls.sqlite3")] == ["chat"]
    beside = Laneway.from_settings(quiet, environ={}, base_dir=tmp_path / "conf")
    assert beside.telemetry is not None
    await beside.aclose()
