"""The record feed: one hand-off per call, each loop turn's records to every observer together."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Sequence

import orjson
import pytest

from laneway.app.feed import RecordFeed
from laneway.core.records import CallRecord
from laneway.metrics import Metrics
from laneway.server.access_log import AccessLog
from laneway.telemetry.writer import TelemetryWriter
from tests.telemetry.test_writer import FakeStore


def record(lane: str = "l") -> CallRecord:
    return CallRecord(1.0, lane, "chat", "ok", 0.01, ())


def unpriced(record: CallRecord) -> tuple[float | None, str]:
    return None, "unpriced"


class Batches:
    """A batch observer keeping each batch it was handed."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.catch_up: Callable[[], None] | None = None

    def observe_batch(self, records: Sequence[CallRecord]) -> None:
        self.batches.append([r.lane for r in records])

    def follow(self, catch_up: Callable[[], None]) -> None:
        self.catch_up = catch_up


class Plain:
    """A plain observer keeping each record."""

    def __init__(self) -> None:
        self.lanes: list[str] = []

    def observe(self, record: CallRecord) -> None:
        self.lanes.append(record.lane)


class Broken:
    def observe_batch(self, records: Sequence[CallRecord]) -> None:
        raise RuntimeError("observer bug")

    def follow(self, catch_up: Callable[[], None]) -> None:
        return None


async def test_the_records_of_one_loop_turn_reach_every_consumer_together_after_it() -> None:
    batched, plain = Batches(), Plain()
    feed = RecordFeed([batched, plain])
    feed.observe(record("a"))
    feed.observe(record("b"))
    assert batched.batches == [] and plain.lanes == [], "the request path only appends"
    await asyncio.sleep(0)
    assert batched.batches == [["a", "b"]]
    assert plain.lanes == ["a", "b"]
    feed.observe(record("c"))
    await asyncio.sleep(0)
    assert batched.batches == [["a", "b"], ["c"]]


async def test_a_consumer_reading_its_figures_catches_up_first() -> None:
    batched = Batches()
    feed = RecordFeed([batched])
    feed.observe(record("a"))
    assert batched.catch_up is not None
    batched.catch_up()
    assert batched.batches == [["a"]]
    await asyncio.sleep(0)
    assert batched.batches == [["a"]], "a record is handed once"


async def test_metrics_read_between_two_batches_count_every_record() -> None:
    metrics = Metrics(unpriced)
    feed = RecordFeed([metrics])
    feed.observe(record())
    feed.observe(record())
    assert metrics.counts[("laneway_requests", ("l", "", "ok"))] == 2
    assert metrics.history.span("l", "", 0, 10**9).requests == 2
    await asyncio.sleep(0)
    assert metrics.counts[("laneway_requests", ("l", "", "ok"))] == 2


async def test_a_failing_consumer_neither_fails_the_call_nor_starves_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    batched = Batches()
    feed = RecordFeed([Broken(), batched])
    feed.observe(record())
    await asyncio.sleep(0)
    assert batched.batches == [["l"]]
    assert "observer bug" in caplog.text


def test_without_a_running_loop_the_batch_goes_at_once() -> None:
    out = io.StringIO()
    feed = RecordFeed([AccessLog(unpriced, out)])
    feed.observe(record())
    assert orjson.loads(out.getvalue())["lane"] == "l"


async def test_each_loop_gets_its_own_flush() -> None:
    batched = Batches()
    feed = RecordFeed([batched])

    def in_another_loop() -> None:
        async def call() -> None:
            feed.observe(record("other"))

        loop = asyncio.new_event_loop()
        loop.run_until_complete(call())
        loop.close()  # closed before the flush it scheduled could run

    await asyncio.to_thread(in_another_loop)
    feed.observe(record("here"))
    await asyncio.sleep(0)
    assert [lane for batch in batched.batches for lane in batch] == ["other", "here"]


async def test_a_closing_telemetry_writer_writes_the_records_still_waiting() -> None:
    store = FakeStore()
    writer = TelemetryWriter(store, unpriced)
    feed = RecordFeed([writer])
    writer.start()
    feed.observe(record())
    stats = await writer.aclose()
    assert (stats.written, sum(map(len, store.batches))) == (1, 1)


def test_a_full_telemetry_queue_drops_and_counts_the_rest_of_a_batch() -> None:
    writer = TelemetryWriter(FakeStore(), unpriced, queue_size=3)
    writer.observe_batch([record() for _ in range(5)])
    assert (writer.depth, writer.dropped) == (3, 2)
