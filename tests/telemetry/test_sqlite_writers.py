"""Two writers on one SQLite file, as ``serve --workers 2`` runs: no "database is locked"."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from laneway.telemetry import SqliteTelemetryStore, to_row
from laneway.telemetry.schema import TABLE
from tests.telemetry.test_spend_query import KNOWN, record

ROUNDS = 40
ROWS = [to_row(record("lane", KNOWN), 0.5, "priced")] * 50


async def test_a_store_opens_while_another_writer_holds_the_new_file(tmp_path: Path) -> None:
    """The switch to WAL failed at once under another writer's lock (worker 2's first flush)."""
    path = tmp_path / "telemetry.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE other (x)")
    other.execute("BEGIN IMMEDIATE")
    store = SqliteTelemetryStore(path)
    opening = asyncio.ensure_future(store.open())
    await asyncio.sleep(0.3)
    other.execute("COMMIT")
    other.close()
    await opening
    try:
        await store.write_batch(ROWS)
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_two_writers_open_and_flush_together(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    stores = [SqliteTelemetryStore(path), SqliteTelemetryStore(path)]
    await asyncio.gather(*(store.open() for store in stores))
    try:
        for round_ in range(ROUNDS):
            await asyncio.gather(
                *(store.write_batch(ROWS, f"{n}-{round_}") for n, store in enumerate(stores))
            )
    finally:
        await asyncio.gather(*(store.close() for store in stores))
    with sqlite3.connect(path) as conn:
        assert conn.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0] == 2 * ROUNDS * 50
