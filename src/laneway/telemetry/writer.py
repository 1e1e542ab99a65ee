"""``TelemetryWriter``: the observer that gets every call into the database, later.

``observe_batch`` gets the records of each turn of the event loop together,
after their answers went (the engine's record feed, ``laneway.app.feed``), and
only appends them to a bounded queue (``observe``: one record, the same way);
when the queue is full a record is dropped and counted. A background task
wakes once per batch (``batch_size`` rows queued, or ``flush_interval``
passed), never per record, prices the rows a slice at a time so the loop
is never held for a whole batch, and writes them, each write bounded by
``write_timeout``. A slow, hanging or dead database therefore costs requests
nothing: it shows up as queue depth and spooled rows, which the metrics
report, and as a log warning when writes start or stop failing. Rows are
redacted of the configuration's secrets (a caller's request id, an
upstream's message) before they are written.

With a ``Spool`` (``laneway serve`` gives one, beside the config) no row is
lost to an outage: a batch the database refuses goes to the spool file, and
while the spool holds rows everything newer follows it there, so order is
kept. The writer retries the spool's head every ``flush_interval``; when the
database answers it writes the spool back, oldest first, each row once, then
returns to writing from the queue. Rows still queued at shutdown are spooled
for the next start. Only a full spool (or a full queue) drops rows, counted
as drops. Without a spool, rows of a failed write are lost and counted as
failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Callable, Sequence

from laneway.core.records import CallRecord
from laneway.core.redact import NO_SECRETS, Redactor
from laneway.telemetry.port import Row, TelemetryStore
from laneway.telemetry.rows import to_row
from laneway.telemetry.spool import Spool
from laneway.telemetry.spooling import SpoolKeeper, WriterStats

log = logging.getLogger("laneway.telemetry")

ROWS_PER_STEP = 25
"""Rows priced and built between two yields to the loop (~0.1 ms of work)."""

CostFn = Callable[[CallRecord], tuple[float | None, str]]
"""Prices a record: ``(usd or None, status)``; ``accounting.Pricer.cost`` fits."""


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
        spool: Spool | None = None,
    ) -> None:
        self.store = store
        self.spool = spool
        self.redactor = redactor
        self.cost = cost
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.write_timeout = write_timeout
        self.stats = WriterStats()
        self.queue_size = queue_size
        self._queue: deque[CallRecord] = deque()
        self._in_flight: list[CallRecord] = []
        self._in_flight_name = ""
        self._spooling = None if spool is None else SpoolKeeper(spool, self.stats)
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._opened = False
        self._failing = False
        self._catch_up: Callable[[], None] = _nothing_waits

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
    def spooled(self) -> int:
        """Rows waiting in the spool file for the database to return."""
        return 0 if self.spool is None else self.spool.rows

    @property
    def failed(self) -> int:
        """Records lost to failed or timed-out writes."""
        return self.stats.failed

    def observe(self, record: CallRecord) -> None:
        """Queue ``record``, or count it dropped when the queue is full. Never waits."""
        self.observe_batch((record,))

    def observe_batch(self, records: Sequence[CallRecord]) -> None:
        """Queue ``records``, counting those past a full queue as dropped. Never waits."""
        queue = self._queue
        room = self.queue_size - len(queue)
        if len(records) <= room:
            queue.extend(records)
        else:
            kept = max(room, 0)
            queue.extend(records[:kept])
            self.stats.dropped += len(records) - kept
        if len(queue) >= self.batch_size:
            self._ready.set()

    def follow(self, catch_up: Callable[[], None]) -> None:
        """Call ``catch_up`` before closing, so records still waiting for their batch are kept."""
        self._catch_up = catch_up

    def start(self) -> None:
        """Start the background writer on the running loop (opens the store lazily)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="telemetry")

    async def aclose(self, timeout: float = 5.0) -> WriterStats:
        """Flush what is queued within ``timeout`` seconds, then close the store.

        Records still queued when the bound passes go to the spool (counted as
        dropped when there is none, or it is full).
        """
        self._catch_up()
        self._closing = True
        self._ready.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except TimeoutError:
                await _cancel(self._task)
        self._keep_leftovers()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.store.close(), timeout)
        return self.stats

    def _keep_leftovers(self) -> None:
        """Spool (or count as dropped) the records the shutdown bound left unwritten."""
        batches = [(self._in_flight_name, self._in_flight)] if self._in_flight else []
        batches += self._named(list(self._queue))
        self._in_flight, self._queue = [], deque()
        count = sum(len(records) for _, records in batches)
        if not count:
            return
        if self.spool is None or self._spooling is None:
            self.stats.dropped += count
            return
        dropped = self._spooling.append_now([(n, self._built(r)) for n, r in batches])
        self.stats.dropped += dropped
        log.warning(
            "telemetry at shutdown: %d rows kept in %s for the next start, %d dropped (spool full)",
            count - dropped,
            self.spool.path,
            dropped,
        )

    async def _run(self) -> None:
        if self.spool is not None and self._spooling is not None:
            adopted = await self._spooling.io(self.spool.adopt)
            if self.spool.rows:
                log.warning(
                    "telemetry: %d rows in %s (%d from earlier processes) are written first",
                    self.spool.rows,
                    self.spool.path,
                    adopted or 0,
                )
        while not (self._closing and not self._queue and not self.spooled):
            if self.spooled:
                await self._replay()
                continue
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

    def _take(self, most: int | None = None) -> list[CallRecord]:
        """Up to ``most`` (default ``batch_size``) records from the head of the queue."""
        self._ready.clear()
        count = min(most or self.batch_size, len(self._queue))
        return [self._queue.popleft() for _ in range(count)]

    async def _rows(self, batch: list[CallRecord]) -> list[Row]:
        """Price and build the rows, yielding to the loop every ``ROWS_PER_STEP``."""
        rows: list[Row] = []
        for start in range(0, len(batch), ROWS_PER_STEP):
            if start:
                await asyncio.sleep(0)
            rows.extend(to_row(r, *self.cost(r)) for r in batch[start : start + ROWS_PER_STEP])
        return self._redacted(rows)

    def _built(self, records: list[CallRecord]) -> list[Row]:
        """The rows of ``records`` at once (at shutdown, when the loop has nothing else to do)."""
        return self._redacted([to_row(r, *self.cost(r)) for r in records])

    def _named(self, records: list[CallRecord]) -> list[tuple[str, list[CallRecord]]]:
        """``records`` cut into batches of ``batch_size``, each with a fresh name."""
        size = self.batch_size
        return [(uuid.uuid4().hex, records[i : i + size]) for i in range(0, len(records), size)]

    def _redacted(self, rows: list[Row]) -> list[Row]:
        if not self.redactor.active:
            return rows
        text = self.redactor.text
        return [tuple(text(v) if isinstance(v, str) else v for v in row) for row in rows]

    async def _write(self, batch: list[CallRecord]) -> None:
        """Write a batch from the queue; a refused one goes to the spool under its name."""
        name = uuid.uuid4().hex
        self._in_flight, self._in_flight_name = batch, name
        rows = await self._rows(batch)
        stored = await self._stored(rows, name)
        self._in_flight = []
        if stored:
            self.stats.written += len(rows)
        elif self.spool is None:
            self.stats.failed += len(rows)
        else:
            assert self._spooling is not None
            await self._spooling.append([(name, rows)])

    async def _replay(self) -> None:
        """Queue to spool (order), then one batch from the spool's head, or a pause."""
        spool, spooling = self.spool, self._spooling
        assert spool is not None and spooling is not None
        if self._queue:
            batches = self._named(self._take(len(self._queue)))
            await spooling.append([(name, await self._rows(records)) for name, records in batches])
        head = await spooling.io(spool.head)
        batch, offset = head if head is not None else (None, 0)
        if head is not None and batch is None:  # nothing past the offset (emptied by hand)
            await spooling.io(spool.clear)
            return
        if batch is not None and await self._stored(batch[1], batch[0]):
            rows = batch[1]
            await spooling.io(spool.advance, offset, len(rows))
            self.stats.written += len(rows)
            if not spool.rows:
                spooling.emptied()
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.flush_interval):
                await self._ready.wait()
        self._ready.clear()

    async def _stored(self, rows: Sequence[Row], name: str) -> bool:
        """Write batch ``name`` within ``write_timeout``; ``False`` when that failed."""
        try:
            async with asyncio.timeout(self.write_timeout):
                if not self._opened:
                    await self.store.open()
                    self._opened = True
                await self.store.write_batch(rows, name)
        except Exception as exc:
            self._failed(len(rows), exc)
            return False
        if self._failing:
            log.warning("telemetry writes recovered; %d rows lost in all so far", self.failed)
            self._failing = False
        return True

    def _failed(self, count: int, exc: Exception) -> None:
        self.stats.failed_batches += 1
        if not self._failing:
            fate = "lost" if self.spool is None else f"kept in {self.spool.path}"
            log.warning("telemetry write failed, %d rows %s: %r", count, fate, exc)
            self._failing = True


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _nothing_waits() -> None:
    """The catch-up of a writer no feed hands records to."""
