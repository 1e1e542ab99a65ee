"""A library call and a gateway call leave the same telemetry row.

Both sides are built from one config file by the one composition root: the
library by ``Laneway.from_config``, the gateway by ``build_gateway``
(what ``laneway serve`` runs), served over loopback. The same chat, stream
and embeddings calls go to the simulator through each; their rows must match
column by column, except the columns listed in ``PER_CALL``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from laneway import Laneway
from laneway.app.composer import build_gateway
from laneway.cli.serve import config_dir
from laneway.config.load import load_config
from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.server.support import serve_app

PER_CALL = frozenset({"id", "time", "request_id", "latency_ms", "ttfb_ms", "queue_wait_ms"})
"""Columns that differ between any two calls: identity, start time and durations."""
ATTEMPT_TIMES = frozenset({"elapsed_ms", "waited_ms"})
"""Per-attempt durations inside ``attempts_json``, compared without them."""
HELLO = [{"role": "user", "content": "hello"}]


def write_config(folder: Path, sim: RunningSim, chat: str, embed: str) -> Path:
    price = {"input": 1.0, "output": 4.0}
    lanes = {
        "chat": {"sources": [{"base_url": sim_url(sim, chat), "model": "m", "price": price}]},
        "vectors": {
            "kind": "embed",
            "sources": [{"base_url": sim_url(sim, embed), "model": "e", "price": price}],
        },
    }
    folder.mkdir()
    path = folder / "laneway.yaml"
    path.write_text(yaml.safe_dump({"lanes": lanes}))
    return path


def rows(folder: Path) -> list[dict[str, Any]]:
    """The rows written beside the config, in call order, without ``PER_CALL`` columns."""
    with sqlite3.connect(folder / "laneway.sqlite3") as conn:
        conn.row_factory = sqlite3.Row
        written = [dict(row) for row in conn.execute("SELECT * FROM calls ORDER BY time")]
    for row in written:
        attempts = json.loads(row["attempts_json"])
        row["attempts_json"] = [
            {k: v for k, v in attempt.items() if k not in ATTEMPT_TIMES} for attempt in attempts
        ]
        for column in PER_CALL & row.keys():
            del row[column]
    return written


async def through_library(path: Path) -> None:
    async with Laneway.from_config(path) as lw:
        await lw.chat("chat", HELLO)
        async for _ in lw.chat_stream("chat", HELLO):
            pass
        await lw.embed("vectors", ["one", "two"])


async def through_gateway(path: Path) -> None:
    config, environ = load_config(path)
    with serve_app(build_gateway(config, environ, config_dir(path))) as gw:
        async with aiohttp.ClientSession() as http:
            chat = {"model": "chat", "messages": HELLO}
            async with http.post(f"{gw.v1}/chat/completions", json=chat) as answer:
                assert answer.status == 200
                await answer.read()
            async with http.post(
                f"{gw.v1}/chat/completions", json={**chat, "stream": True}
            ) as answer:
                assert answer.status == 200
                await answer.read()
            embed = {"model": "vectors", "input": ["one", "two"]}
            async with http.post(f"{gw.v1}/embeddings", json=embed) as answer:
                assert answer.status == 200
                await answer.read()


async def test_library_and_gateway_rows_match_column_by_column(sim, tmp_path) -> None:
    chat, embed = unique_spec("ok"), unique_spec("ok")
    library = write_config(tmp_path / "library", sim, chat, embed)
    gateway = write_config(tmp_path / "gateway", sim, chat, embed)
    await through_library(library)
    await through_gateway(gateway)
    from_library, from_gateway = rows(library.parent), rows(gateway.parent)
    assert [row["kind"] for row in from_library] == ["chat", "chat", "embed"]
    assert [row["stream"] for row in from_library] == [0, 1, 0]
    assert all(row["cost_status"] == "priced" for row in from_library)
    for mine, theirs in zip(from_library, from_gateway, strict=True):
        assert mine.keys() == theirs.keys()
        differing = {c: (mine[c], theirs[c]) for c in mine if mine[c] != theirs[c]}
        assert differing == {}
