"""The writer: never waits on the request path, batches, counts what it loses."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from laneway.core.records import CallRecord
from laneway.telemetry import COLUMN_NAMES, CallSample, Row, SpendRow, TelemetryWriter
from laneway.telemetry.writer import ROWS_PER_STEP
from tests.virtual import on_virtual_clock

RECORD = CallRecord(1_750_000_000.0, "l", "chat", "ok", 0.1, ())


def no_price(record: CallRecord) -> tuple[float | None, str]:
    return None, "unpriced"


class FakeStore:
    """Keeps batches; can be told to fail or hang."""

    def __init__(self, fail: bool = False, hang: bool = False) -> None:
        self.batches: list[list[Row]] = []
        self.fail, self.hang = fail, hang
        self.opened = self.closed = 0

    async def open(self) -> None:
        self.opened += 1

    async def write_batch(self, rows: Sequence[Row], batch: str | None = None) -> None:
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail:
            raise ConnectionError("database is down")
        self.batches.append(list(rows))

    async def query_spend(self, since: float, by: str) -> list[SpendRow]:
        return []

    async def query_calls(self, since: float, lane: str) -> list[CallSample]:
        return []

    async def close(self) -> None:
        self.closed += 1
        if self.hang:
            await asyncio.sleep(3600)


def writer(store: FakeStore, **options: Any) -> TelemetryWriter:
    return TelemetryWriter(store, no_price, **options)


async def test_full_queue_drops_and_counts() -> None:
    store = FakeStore()
    w = writer(store, queue_size=3)
    for _ in range(5):
        w.observe(RECORD)
    assert (w.depth, w.dropped) == (3, 2)
    w.start()
    stats = await w.aclose()
    assert (stats.written, stats.dropped, store.closed) == (3, 2, 1)


async def test_full_batches_go_without_waiting_for_the_interval() -> None:
    store = FakeStore()
    w = writer(store, batch_size=2, flush_interval=30)
    w.start()
    for _ in range(4):
        w.observe(RECORD)
    for _ in range(50):
        await asyncio.sleep(0.01)
        if len(store.batches) == 2:
            break
    assert [len(b) for b in store.batches] == [2, 2]
    await w.aclose()


async def test_a_batch_is_priced_a_slice_at_a_time_and_written_whole() -> None:
    """The loop runs between slices of a batch, never inside one."""
    ticks = 0
    seen: list[int] = []

    def price(record: CallRecord) -> tuple[float | None, str]:
        seen.append(ticks)
        return None, "unpriced"

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    size = 3 * ROWS_PER_STEP
    store = FakeStore()
    w = TelemetryWriter(store, price, batch_size=size, flush_interval=30)
    ticker = asyncio.create_task(tick())
    for _ in range(size):
        w.observe(RECORD)
    w.start()
    await w.aclose()
    ticker.cancel()
    assert [len(b) for b in store.batches] == [size]
    slices = [seen[i : i + ROWS_PER_STEP] for i in range(0, size, ROWS_PER_STEP)]
    assert all(len(set(part)) == 1 for part in slices)
    assert slices[0][0] < slices[1][0] < slices[2][0]


@on_virtual_clock
async def test_a_partial_batch_goes_after_the_interval() -> None:
    store = FakeStore()
    w = writer(store, flush_interval=0.05)
    w.start()
    w.observe(RECORD)
    await asyncio.sleep(0.3)
    assert [len(b) for b in store.batches] == [1]
    row = dict(zip(COLUMN_NAMES, store.batches[0][0], strict=True))
    assert (row["cost_usd"], row["cost_status"]) == (None, "unpriced")
    await w.aclose()


async def test_failed_writes_are_counted_not_raised() -> None:
    w = writer(FakeStore(fail=True), flush_interval=0.01)
    w.start()
    for _ in range(3):
        w.observe(RECORD)
    stats = await w.aclose()
    assert (stats.written, stats.failed) == (0, 3) and stats.failed_batches >= 1


@on_virtual_clock
async def test_a_hanging_database_is_bounded_everywhere() -> None:
    clock = asyncio.get_running_loop()
    w = writer(FakeStore(hang=True), flush_interval=0.01, write_timeout=0.1, queue_size=5)
    w.start()
    started = clock.time()
    for _ in range(20):
        w.observe(RECORD)
        await asyncio.sleep(0.01)
    observe_done = clock.time()
    stats = await w.aclose(timeout=0.2)
    assert clock.time() - observe_done < 1.0
    assert stats.failed >= 1 and stats.written == 0
    assert stats.failed + stats.dropped == 20, "every record is accounted for"
    assert observe_done - started < 1.0


async def test_close_flushes_what_is_queued() -> None:
    store = FakeStore()
    w = writer(store, batch_size=3, flush_interval=30)
    w.start()
    for _ in range(7):
        w.observe(RECORD)
    stats = await w.aclose()
    assert sum(len(b) for b in store.batches) == 7 == stats.written


async def test_close_without_start_counts_the_queue_as_dropped() -> None:
    w = writer(FakeStore())
    w.observe(RECORD)
    assert (await w.aclose()).dropped == 1


@on_virtual_clock
async def test_close_is_bounded_even_mid_write() -> None:
    clock = asyncio.get_running_loop()
    w = writer(FakeStore(hang=True), flush_interval=0.01, write_timeout=60)
    w.start()
    for _ in range(3):
        w.observe(RECORD)
    await asyncio.sleep(0.05)
    w.observe(RECORD)
    started = clock.time()
    stats = await w.aclose(timeout=0.1)
    assert clock.time() - started < 1.0
    assert (stats.dropped, stats.written, stats.failed) == (4, 0, 0)
