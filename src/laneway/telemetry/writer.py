"""``TelemetryWriter``: the observer that gets every call into the database, later.

``observe`` runs on the request path and only does ``put_nowait`` on a
bounded queue; when the queue is full the record is dropped and counted. A
background task takes batches (``batch_size`` rows, or whatever arrived within
``flush_interval``), prices them and writes them, each write bounded by
``write_timeout``. A slow, hanging or dead database therefore costs requests
nothing: it shows up as queue depth, drops and failed rows, which the metrics
report, and as a log warning when writes start or stop failing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from laneway.core.records import CallRecord
from laneway.telemetry.port import TelemetryStore
from laneway.telemetry.rows import to_row

log = logging.getLogger("laneway.telemetry")

CostFn = Callable[[CallRecord], tuple[float | None, str]]
"""Prices a record: ``(usd or None, status)``; ``accounting.Pricer.cost`` fits."""


@dataclass(slots=True)
class WriterStats:
    """What happened to the records the writer was given."""

    written: int = 0
    dropped: int = 0
    failed: int = 0
    failed_batches: int = 0


class TelemetryWriter:
    """Queues call records and writes them in batches to a ``TelemetryStore``."""

    def __init__(
        self,
        store: TelemetryStore,
        cost: CostFn,
        *,
        queue_size: int = 10_000,
        batch_size: int = 200,
        flush_interval: float = 1.0,
        write_timeout: float = 10.0,
    ) -> None:
        self.store = store
        self.cost = cost
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.write_timeout = write_timeout
        self.stats = WriterStats()
        self._queue: asyncio.Queue[CallRecord | None] = asyncio.Queue(queue_size)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._opened = False
        self._failing = False

    @property
    def depth(self) -> int:
        """Records waiting to be written."""
        return self._queue.qsize()

    @property
    def dropped(self) -> int:
        """Records lost to a full queue or to the shutdown bound."""
        return self.stats.dropped

    @property
    def written(self) -> int:
        """Records the database accepted."""
        return self.stats.written

    @property
    def failed(self) -> int:
        """Records lost to failed or timed-out writes."""
        return self.stats.failed

    def observe(self, record: CallRecord) -> None:
        """Queue ``record``, or count it dropped when the queue is full. Never waits."""
        try:
            self._queue.put_nowait(record)
        except asyncio.QueueFull:
            self.stats.dropped += 1

    def start(self) -> None:
        """Start the background writer on the running loop (opens the store lazily)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="telemetry")

    async def aclose(self, timeout: float = 5.0) -> WriterStats:
        """Flush what is queued within ``timeout`` seconds, then close the store.

        Records still queued when the bound passes are counted as dropped.
        """
        self._closing = True
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except TimeoutError:
                await _cancel(self._task)
        self.stats.dropped += sum(1 for r in _drain(self._queue) if r is not None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.store.close(), timeout)
        return self.stats

    async def _run(self) -> None:
        while not (self._closing and self._queue.empty()):
            batch = await self._collect()
            if batch:
                await self._write(batch)

    async def _collect(self) -> list[CallRecord]:
        """Up to ``batch_size`` records, waiting at most ``flush_interval`` for more."""
        batch: list[CallRecord] = []
        deadline = asyncio.get_running_loop().time() + self.flush_interval
        while len(batch) < self.batch_size:
            if self._queue.empty() and self._closing:
                break
            try:
                async with asyncio.timeout_at(deadline):
                    record = await self._queue.get()
            except TimeoutError:
                break
            if record is not None:
                batch.append(record)
        return batch

    async def _write(self, batch: list[CallRecord]) -> None:
        try:
            rows = [to_row(record, *self.cost(record)) for record in batch]
            async with asyncio.timeout(self.write_timeout):
                if not self._opened:
                    await self.store.open()
                    self._opened = True
                await self.store.write_batch(rows)
        except asyncio.CancelledError:
            self.stats.dropped += len(batch)  # cut off by the shutdown bound
            raise
        except Exception as exc:
            self._failed(len(batch), exc)
        else:
            self.stats.written += len(batch)
            if self._failing:
                log.warning("telemetry writes recovered; %d rows lost in all so far", self.failed)
                self._failing = False

    def _failed(self, count: int, exc: Exception) -> None:
        self.stats.failed += count
        self.stats.failed_batches += 1
        if not self._failing:
            log.warning("telemetry write failed, %d rows lost: %r", count, exc)
            self._failing = True


def _drain(queue: asyncio.Queue[CallRecord | None]) -> list[CallRecord | None]:
    out: list[CallRecord | None] = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
