"""``TelemetryWriter``: the observer that gets every call into the database, later.

``observe`` runs on the request path and only appends to a bounded queue;
when the queue is full the record is dropped and counted. A background task
wakes once per batch (``batch_size`` rows queued, or ``flush_interval``
passed), never per record, prices the rows a slice at a time so the loop
is never held for a whole batch, and writes them, each write bounded by
``write_timeout``. A slow, hanging or dead database therefore costs requests
nothing: it shows up as queue depth, drops and failed rows, which the metrics
report, and as a log warning when writes start or stop failing. Rows are
redacted of the configuration's secrets (a caller's request id, an
upstream's message) before they are written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from laneway.core.records import CallRecord
from laneway.core.redact import NO_SECRETS, Redactor
from laneway.telemetry.port import Row, TelemetryStore
from laneway.telemetry.rows import to_row

log = logging.getLogger("laneway.telemetry")

ROWS_PER_STEP = 25
"""Rows priced and built between two yields to the loop (~0.1 ms of work)."""

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
        redactor: Redactor = NO_SECRETS,
    ) -> None:
        self.store = store
        self.redactor = redactor
        self.cost = cost
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.write_timeout = write_timeout
        self.stats = WriterStats()
        self.queue_size = queue_size
        self._queue: deque[CallRecord] = deque()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._opened = False
        self._failing = False

    @property
    def depth(self) -> int:
        """Records waiting to be written."""
        return len(self._queue)

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
        if len(self._queue) >= self.queue_size:
            self.stats.dropped += 1
            return
        self._queue.append(record)
        if len(self._queue) >= self.batch_size:
            self._ready.set()

    def start(self) -> None:
        """Start the background writer on the running loop (opens the store lazily)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="telemetry")

    async def aclose(self, timeout: float = 5.0) -> WriterStats:
        """Flush what is queued within ``timeout`` seconds, then close the store.

        Records still queued when the bound passes are counted as dropped.
        """
        self._closing = True
        self._ready.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except TimeoutError:
                await _cancel(self._task)
        self.stats.dropped += len(self._queue)
        self._queue.clear()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.store.close(), timeout)
        return self.stats

    async def _run(self) -> None:
        while not (self._closing and not self._queue):
            await self._batch_due()
            batch = self._take()
            if batch:
                await self._write(batch)

    async def _batch_due(self) -> None:
        """Return once a full batch is queued, ``flush_interval`` passed, or closing began."""
        if len(self._queue) >= self.batch_size or self._closing:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.flush_interval):
                await self._ready.wait()

    def _take(self) -> list[CallRecord]:
        """Up to ``batch_size`` records from the head of the queue."""
        self._ready.clear()
        count = min(self.batch_size, len(self._queue))
        return [self._queue.popleft() for _ in range(count)]

    async def _rows(self, batch: list[CallRecord]) -> list[Row]:
        """Price and build the rows, yielding to the loop every ``ROWS_PER_STEP``."""
        rows: list[Row] = []
        for start in range(0, len(batch), ROWS_PER_STEP):
            if start:
                await asyncio.sleep(0)
            rows.extend(to_row(r, *self.cost(r)) for r in batch[start : start + ROWS_PER_STEP])
        if self.redactor.active:
            text = self.redactor.text
            rows = [tuple(text(v) if isinstance(v, str) else v for v in row) for row in rows]
        return rows

    async def _write(self, batch: list[CallRecord]) -> None:
        try:
            rows = await self._rows(batch)
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


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
