"""PostgreSQL telemetry over asyncpg, in a schema of its own choosing.

Rows go in with ``COPY`` (one round trip per batch). ``open`` migrates under
a transaction-scoped advisory lock, so several gateway processes starting at
once do not race to add the same column.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import asyncpg

from laneway.core.errors import TelemetryError
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

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_MIGRATION_LOCK = 0x6C616E65  # "lane": the advisory lock key of schema migrations


class PostgresTelemetryStore:
    """Call rows in ``<schema>.calls`` of the database at ``dsn``."""

    def __init__(self, dsn: str, schema: str = "public", *, connect_timeout: float = 5.0) -> None:
        if not _IDENTIFIER.match(schema):
            raise TelemetryError(f"not a plain PostgreSQL schema name: {schema!r}")
        self.dsn = dsn
        self.schema = schema
        self.connect_timeout = connect_timeout
        self._pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        """Connect a small pool, then create or migrate the schema."""
        if self._pool is not None:
            return
        pool = await asyncpg.create_pool(
            self.dsn, min_size=1, max_size=2, timeout=self.connect_timeout
        )
        try:
            async with pool.acquire() as conn, conn.transaction():
                await self._migrate(conn)
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def write_batch(self, rows: Sequence[Row], batch: str | None = None) -> None:
        """Insert ``rows`` with one ``COPY``, unless ``batch`` was written already."""
        async with self._ready.acquire() as conn, conn.transaction():
            if batch is not None:
                claim = (
                    f"INSERT INTO {self._table(BATCH_TABLE)} VALUES ($1, $2) ON CONFLICT DO NOTHING"
                )
                if await conn.execute(claim, batch, time.time()) == "INSERT 0 0":
                    return
            await conn.copy_records_to_table(
                TABLE, records=rows, columns=COLUMN_NAMES, schema_name=self.schema
            )

    async def query_spend(self, since: float, by: str) -> list[SpendRow]:
        """Spend since ``since``, grouped by ``by``."""
        sql = spend_select(self._table(TABLE), by, "$1")
        async with self._ready.acquire() as conn:
            rows = await conn.fetch(sql, since)
        return [SpendRow(*row) for row in rows]

    async def query_calls(self, since: float, lane: str) -> list[CallSample]:
        """``lane``'s calls since ``since``, oldest first."""
        sql = calls_select(self._table(TABLE), ("$1", "$2"))
        async with self._ready.acquire() as conn:
            rows = await conn.fetch(sql, since, lane)
        return [call_sample(tuple(row)) for row in rows]

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @property
    def _ready(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the store is not open")
        return self._pool

    def _table(self, name: str) -> str:
        return f'"{self.schema}".{name}'

    async def _migrate(self, conn: asyncpg.pool.PoolConnectionProxy) -> None:
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        versions = self._table(VERSION_TABLE)
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {versions} (version INTEGER NOT NULL)")
        check_version(await conn.fetchval(f"SELECT MAX(version) FROM {versions}"))
        existing = await conn.fetch(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
            self.schema,
            TABLE,
        )
        table = self._table(TABLE)
        if existing:
            for column in missing_columns([r["column_name"] for r in existing]):
                await conn.execute(add_column(table, column, "postgres"))
        else:
            await conn.execute(create_table(table, "postgres"))
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_time ON {table} (time)")
        batches = self._table(BATCH_TABLE)
        await conn.execute(batch_table_sql(batches))
        await conn.execute(f"DELETE FROM {batches} WHERE at < $1", time.time() - BATCH_KEEP)
        await conn.execute(f"DELETE FROM {versions}")
        await conn.execute(f"INSERT INTO {versions} VALUES ($1)", SCHEMA_VERSION)
