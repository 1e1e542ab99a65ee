"""SQLite telemetry (stdlib ``sqlite3``), in WAL mode, on one worker thread.

``sqlite3`` blocks, so every statement runs on a single dedicated thread
that owns the connection; the event loop only awaits a future. A batch of
200 rows commits in ~1.5 ms on local disk (measured: ``executemany`` in one
transaction, ``synchronous=NORMAL``), over 100k rows/s, so one thread keeps up
with far more calls than a gateway process serves, without an extra
dependency (aiosqlite runs the same design: a thread per connection).

``sqlite3`` is imported when the store opens, so a gateway with telemetry
off (or on PostgreSQL) does not load SQLite at all (~1 MiB resident).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from laneway.telemetry.port import CallSample, Row, SpendRow
from laneway.telemetry.schema import (
    BATCH_KEEP,
    BATCH_TABLE,
    COLUMN_NAMES,
    SCHEMA_VERSION,
    TABLE,
    VERSION_TABLE,
    add_column,
    batch_table_sql,
    call_sample,
    calls_select,
    check_version,
    create_table,
    missing_columns,
    spend_select,
)

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")
INSERT = (
    f"INSERT INTO {TABLE} ({', '.join(COLUMN_NAMES)}) VALUES ({', '.join('?' * len(COLUMN_NAMES))})"
)
CACHE_KIB = 64
"""The connection's page cache. Writes only append, touching the last pages of
the table and of its time index; SQLite's default (2 MiB) filled up with pages
never read again, and 200-row batches commit as fast with 64 KiB (measured on
a 20 MiB table)."""

BUSY_SECONDS = 5.0
"""How long a statement waits for another process's lock (the connection's busy timeout)."""
WAL_RETRY = 0.01
"""Seconds between tries of the switch to WAL mode while another process holds the file."""


class SqliteTelemetryStore:
    """Call rows in a SQLite file (created, or migrated, on ``open``)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def open(self) -> None:
        """Open the file in WAL mode and bring its schema up to date."""
        if self._conn is not None:
            return
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="laneway-sqlite")
        self._conn = await self._run(self._connect)

    async def write_batch(self, rows: Sequence[Row], batch: str | None = None) -> None:
        """Insert ``rows`` in one transaction, unless ``batch`` was written already."""
        await self._run(lambda: self._write(rows, batch))

    async def query_spend(self, since: float, by: str) -> list[SpendRow]:
        """Spend since ``since``, grouped by ``by``."""
        sql = spend_select(TABLE, by, "?")
        rows = await self._run(lambda: self._db.execute(sql, (since,)).fetchall())
        return [SpendRow(*row) for row in rows]

    async def query_calls(self, since: float, lane: str) -> list[CallSample]:
        """``lane``'s calls since ``since``, oldest first."""
        sql = calls_select(TABLE, ("?", "?"))
        rows = await self._run(lambda: self._db.execute(sql, (since, lane)).fetchall())
        return [call_sample(row) for row in rows]

    async def close(self) -> None:
        """Close the connection and let the worker thread go."""
        if self._conn is not None:
            await self._run(self._conn.close)
            self._conn = None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the store is not open")
        return self._conn

    async def _run(self, work: Callable[[], T]) -> T:
        if self._executor is None:
            raise RuntimeError("the store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_SECONDS)
        try:
            wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _write(self, rows: Sequence[Row], batch: str | None) -> None:
        conn = self._db
        conn.execute("BEGIN")
        try:
            claim = f"INSERT OR IGNORE INTO {BATCH_TABLE} VALUES (?, ?)"
            if batch is None or conn.execute(claim, (batch, time.time())).rowcount:
                conn.executemany(INSERT, rows)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode, waiting up to ``BUSY_SECONDS`` for another process.

    The switch fails at once ("database is locked", no busy handler) while
    another connection holds the file's write lock in rollback mode, as a
    second ``serve`` worker does while the first one switches a new file: so
    it is retried until the deadline.
    """
    import sqlite3

    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_RETRY)


def migrate(conn: sqlite3.Connection) -> None:
    """Create or extend the tables in one immediate transaction (one process at a time)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER NOT NULL)")
        check_version(conn.execute(f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()[0])
        existing = [row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})")]
        if existing:
            for column in missing_columns(existing):
                conn.execute(add_column(TABLE, column, "sqlite"))
        else:
            conn.execute(create_table(TABLE, "sqlite"))
        conn.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_time ON {TABLE} (time)")
        conn.execute(batch_table_sql(BATCH_TABLE))
        conn.execute(f"DELETE FROM {BATCH_TABLE} WHERE at < ?", (time.time() - BATCH_KEEP,))
        conn.execute(f"DELETE FROM {VERSION_TABLE}")
        conn.execute(f"INSERT INTO {VERSION_TABLE} VALUES (?)", (SCHEMA_VERSION,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
