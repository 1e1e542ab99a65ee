"""Engine to database: every call leaves a row, and unknown usage stays NULL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from laneway.accounting import Pricer
from laneway.app import build_engine
from laneway.config.models import LanewayConfig
from laneway.core.types import ChatRequest, EmbedRequest
from laneway.http import AiohttpTransport
from laneway.telemetry import PostgresTelemetryStore, SqliteTelemetryStore, TelemetryWriter
from tests.helpers import sim_url, unique_spec

REQUEST = ChatRequest([{"role": "user", "content": "say something reasonable"}])
PRICE = {"input": 1.0, "output": 4.0}


def lanes(sim: Any, **specs: str) -> dict[str, Any]:
    """One lane per spec; ``embed*`` lanes embed, ``est*`` lanes estimate and have a price."""
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        source: dict[str, Any] = {"base_url": sim_url(sim, unique_spec(spec)), "model": "sim-model"}
        lane: dict[str, Any] = {"sources": [source]}
        if name.startswith("embed"):
            lane["kind"] = "embed"
        if name.startswith("est"):
            lane["estimate_missing_usage"] = True
            source["price"] = PRICE
        out[name] = lane
    return out


async def run_calls(config: LanewayConfig, writer: TelemetryWriter) -> None:
    """A plain, a streamed and (on embed lanes) an embeddings call per lane."""
    engine = build_engine(config, {}, transport=AiohttpTransport(), observers=[writer])
    writer.start()
    for name, lane in config.lanes.items():
        if lane.kind == "embed":
            await engine.embed(name, EmbedRequest(["a text", "another"]))
            continue
        await engine.chat(name, REQUEST)
        async for _ in engine.chat_stream(name, REQUEST):
            pass
    await engine.aclose()


def rows(path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        found = [dict(r) for r in conn.execute("SELECT * FROM calls ORDER BY lane, stream")]
    conn.close()
    return found


async def test_calls_land_in_sqlite_with_unknowns_as_null(sim, tmp_path: Path) -> None:
    config = LanewayConfig.model_validate(
        {
            "lanes": lanes(
                sim,
                bare="nousage",
                embed_bare="nousage",
                est="nousage,reasoning",
                thinking="reasoning",
            )
        }
    )
    db = tmp_path / "t.sqlite3"
    writer = TelemetryWriter(SqliteTelemetryStore(db), Pricer.for_lanes(config.lanes).cost)
    await run_calls(config, writer)
    stats = await writer.aclose()
    assert (stats.written, stats.dropped, stats.failed) == (7, 0, 0)
    found = {(r["lane"], r["stream"]): r for r in rows(db)}
    for key in [("bare", 0), ("bare", 1), ("embed_bare", 0)]:
        row = found[key]
        assert row["usage_source"] == "none" and row["outcome"] == "ok"
        tokens = [row[f"{k}_tokens"] for k in ("prompt", "completion", "total", "reasoning")]
        assert tokens == [None] * 4
        assert (row["cost_usd"], row["cost_status"]) == (None, "usage_unknown")
    assert found["embed_bare", 0]["embedding_dim"] is not None
    for stream in (0, 1):
        thinking, estimated = found["thinking", stream], found["est", stream]
        assert thinking["reasoning_tokens"] > 0 and thinking["usage_source"] == "provider"
        assert thinking["completion_tokens"] >= thinking["reasoning_tokens"]
        assert thinking["cost_status"] == "unpriced" and thinking["cost_usd"] is None
        assert estimated["usage_source"] == "estimated" and estimated["reasoning_tokens"] > 0
        assert estimated["cost_status"] == "estimated" and estimated["cost_usd"] > 0


async def test_a_dead_database_fails_no_call(sim) -> None:
    config = LanewayConfig.model_validate({"lanes": lanes(sim, chat="ok", embed="ok")})
    dead = PostgresTelemetryStore("postgresql://postgres@127.0.0.1:1/none", connect_timeout=0.5)
    writer = TelemetryWriter(dead, Pricer.for_lanes(config.lanes).cost, flush_interval=0.01)
    for _ in range(3):
        await run_calls(config, writer)
    stats = await writer.aclose()
    assert stats.written == 0 and stats.failed + stats.dropped == 9 and stats.failed > 0
