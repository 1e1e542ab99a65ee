"""Through a database outage no row is lost: the spool keeps them, in order, and they are
written once when the database returns; only a full spool drops rows, counted and logged.

The first tests drive the writer over a store that can be switched off; the last one
cuts the real PostgreSQL (through a loopback proxy, never the server itself) while calls
run, and counts rows against answered calls.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg

from laneway.app import build_engine
from laneway.core.records import CallMeta, CallRecord
from laneway.core.shapes import chat_request
from laneway.http import AiohttpTransport
from laneway.telemetry import PostgresTelemetryStore, Row, SpendRow, TelemetryWriter
from laneway.telemetry.port import CallSample
from laneway.telemetry.spool import Spool, spool_path
from tests.helpers import one_lane, unique_spec
from tests.proxy import TcpProxy


def priced(record: CallRecord) -> tuple[float | None, str]:
    return None, "unpriced"


def record(n: int) -> CallRecord:
    return CallRecord(1_750_000_000.0 + n, "l", "chat", "ok", 0.1, (), CallMeta(f"r{n:04d}"))


class SwitchedStore:
    """Keeps rows while ``up``; refuses every write while down. With ``lose_answers`` set,
    that many writes are committed and then fail anyway (the answer lost on the way)."""

    def __init__(self) -> None:
        self.up = True
        self.lose_answers = 0
        self.rows: list[Row] = []
        self.batches: set[str] = set()

    async def open(self) -> None:
        if not self.up:
            raise ConnectionRefusedError("database is down")

    async def write_batch(self, rows: Sequence[Row], batch: str | None = None) -> None:
        if not self.up:
            raise ConnectionRefusedError("database is down")
        if batch not in self.batches:
            self.batches.add(batch or "")
            self.rows.extend(rows)
        if self.lose_answers:
            self.lose_answers -= 1
            raise ConnectionResetError("connection was closed in the middle of operation")

    async def query_spend(self, since: float, by: str) -> list[SpendRow]:
        return []

    async def query_calls(self, since: float, lane: str) -> list[CallSample]:
        return []

    async def close(self) -> None:
        pass

    def ids(self) -> list[str]:
        return [row[1] for row in self.rows]


def writer(store: SwitchedStore, path: Path, spool_bytes: int = 1 << 20) -> TelemetryWriter:
    spool = Spool(path, spool_bytes)
    return TelemetryWriter(store, priced, batch_size=10, flush_interval=0.02, spool=spool)


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_an_outage_keeps_every_row_and_writes_each_once_in_order(tmp_path, caplog) -> None:
    store = SwitchedStore()
    w = writer(store, tmp_path / "t.spool")
    w.start()
    with caplog.at_level(logging.WARNING, logger="laneway.telemetry"):
        for n in range(30):
            w.observe(record(n))
        await wait_for(lambda: len(store.rows) == 30)
        store.up = False
        for n in range(30, 130):
            w.observe(record(n))
            if n % 10 == 0:
                await asyncio.sleep(0.01)
        await wait_for(lambda: w.spooled == 100)
        store.up = True
        for n in range(130, 150):
            w.observe(record(n))
        await wait_for(lambda: len(store.rows) == 150)
        stats = await w.aclose()
    assert store.ids() == [f"r{n:04d}" for n in range(150)], "each row once, in order"
    assert (stats.written, stats.dropped, stats.failed, w.spooled) == (150, 0, 0, 0)
    assert not (tmp_path / "t.spool").exists()
    assert "rows kept in" in caplog.text and "the spool is written" in caplog.text


async def test_a_write_whose_answer_was_lost_is_not_applied_twice(tmp_path) -> None:
    store = SwitchedStore()
    store.lose_answers = 2
    w = writer(store, tmp_path / "t.spool")
    w.start()
    for n in range(25):
        w.observe(record(n))
    await wait_for(lambda: len(store.rows) == 25 and w.spooled == 0)
    stats = await w.aclose()
    assert store.ids() == [f"r{n:04d}" for n in range(25)]
    assert stats.failed_batches == 2 and stats.written == 25


async def test_a_full_spool_drops_rows_and_counts_them(tmp_path, caplog) -> None:
    store = SwitchedStore()
    store.up = False
    w = writer(store, tmp_path / "t.spool", spool_bytes=2000)
    w.start()
    with caplog.at_level(logging.WARNING, logger="laneway.telemetry"):
        for n in range(40):
            w.observe(record(n))
        await wait_for(lambda: w.spooled + w.dropped == 40)
        store.up = True
        await wait_for(lambda: w.spooled == 0)
        stats = await w.aclose()
    assert stats.dropped > 0 and stats.written == 40 - stats.dropped
    assert store.ids() == [f"r{n:04d}" for n in range(stats.written)], "the oldest are kept"
    assert "is full" in caplog.text


async def test_rows_left_at_shutdown_are_written_by_the_next_process(tmp_path) -> None:
    store = SwitchedStore()
    store.up = False
    w = writer(store, spool_path(tmp_path, pid=2**22 + 7))  # a process that no longer runs
    w.start()
    for n in range(25):
        w.observe(record(n))
    stats = await w.aclose(timeout=0.05)
    assert stats.dropped == 0 and store.rows == []
    store.up = True
    successor = writer(store, spool_path(tmp_path))
    successor.start()
    for n in range(25, 30):
        successor.observe(record(n))
    await wait_for(lambda: len(store.rows) == 30)
    await successor.aclose()
    assert store.ids() == [f"r{n:04d}" for n in range(30)]
    assert list(tmp_path.iterdir()) == []


async def test_rows_equal_answered_calls_through_a_postgresql_outage(
    sim, pg_dsn, pg_schemas, tmp_path
) -> None:
    """300 calls over 0.3 s; PostgreSQL is cut once rows have reached it, and restored
    once the writer has felt the cut and kept rows in the spool, at least 0.2 s later.
    Calls 150-249 start only after the cut and 250-299 only after the restore, so rows
    arrive before, during and after the outage whatever the machine's speed."""
    target = urlsplit(pg_dsn)
    proxy = TcpProxy((target.hostname or "127.0.0.1", target.port or 5432))
    await proxy.start()
    schema = pg_schemas()
    dsn = target._replace(netloc=f"{target.username}@127.0.0.1:{proxy.port}").geturl()
    store = PostgresTelemetryStore(dsn, schema, connect_timeout=1.0)
    spool = Spool(tmp_path / "t.spool", 1 << 24)
    w = TelemetryWriter(
        store, priced, batch_size=20, flush_interval=0.05, write_timeout=2.0, spool=spool
    )
    observed: list[str | None] = []

    class Order:
        def observe(self, call: CallRecord) -> None:
            observed.append(call.meta.request_id)

    engine = build_engine(
        one_lane(sim, unique_spec("")), {}, transport=AiohttpTransport(), observers=[w, Order()]
    )
    w.start()
    started = time.monotonic()

    cut, restored = asyncio.Event(), asyncio.Event()

    async def call(n: int) -> bool:
        await asyncio.sleep(n * 0.001)
        if n >= 150:
            await (cut if n < 250 else restored).wait()
        meta = CallMeta(request_id=f"c{n:04d}")
        await engine.chat("lane", chat_request([{"role": "user", "content": "hi"}], {}), meta=meta)
        return True

    async def outage() -> None:
        try:
            await wait_for(lambda: w.written >= 40)
            await proxy.stop()
            cut.set()
            cut_at = time.monotonic()
            await wait_for(lambda: w.stats.failed_batches > 0 and w.spooled > 0)
            await asyncio.sleep(max(0.0, cut_at + 0.2 - time.monotonic()))
            await proxy.start()
        finally:  # the waiting calls go on even when the outage did not run as planned
            cut.set()
            restored.set()

    results = await asyncio.gather(*(call(n) for n in range(300)), outage(), return_exceptions=True)
    answered = sum(result is True for result in results[:300])
    assert results[300] is None, f"the outage did not run as planned: {results[300]!r}"
    stats = await w.aclose(timeout=20)
    await engine.aclose()
    await proxy.stop()
    conn = await asyncpg.connect(pg_dsn)
    try:
        written = [
            r[0] for r in await conn.fetch(f'SELECT request_id FROM "{schema}".calls ORDER BY ctid')
        ]
    finally:
        await conn.close()
    assert time.monotonic() - started < 30
    assert answered == 300
    assert stats.failed_batches > 0, "the outage was felt"
    assert written == observed, "every answered call is one row, in the order it finished"
    assert (stats.written, stats.dropped) == (300, 0)


async def test_a_spool_that_cannot_be_written_drops_and_says_so(tmp_path, caplog) -> None:
    store = SwitchedStore()
    store.up = False
    w = writer(store, tmp_path / "missing-folder" / "t.spool")
    w.start()
    with caplog.at_level(logging.WARNING, logger="laneway.telemetry"):
        for n in range(12):
            w.observe(record(n))
        await wait_for(lambda: w.dropped == 12)
        store.up = True
        w.observe(record(12))
        await wait_for(lambda: len(store.rows) == 1)
        stats = await w.aclose()
    assert (stats.dropped, stats.written, store.ids()) == (12, 1, ["r0012"])
    assert "cannot be written" in caplog.text
    assert "is full" not in caplog.text  # it once said "is full (268435456 bytes)" here
