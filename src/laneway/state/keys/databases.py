"""The key store's databases: SQLite (one host) and PostgreSQL (replicas), by URL.

``open_key_store`` picks one: ``postgresql://`` (a ``schema`` query parameter
names the schema, default ``public``) or a SQLite path, relative paths taken
from the config file's folder.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from laneway.state.keys.store import KeyStore, Statement

if TYPE_CHECKING:
    import asyncpg

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_TABLES = ("keys", "teams", "digests", "audit", "version", "key_use", "team_spend")
_CREATE_LOCK = 0x6B657973  # "keys": the advisory lock key of the store's creation
DEFAULT_PATH = "laneway-keys.sqlite3"


class SqliteDatabase:
    """One SQLite file, used from a worker thread (the event loop never waits on disk)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=5000")

    async def run(self, statements: Sequence[Statement]) -> None:
        await asyncio.to_thread(self._run, statements)

    def _run(self, statements: Sequence[Statement]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    self._conn.execute(sql, tuple(args))
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    async def fetch(self, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        return await asyncio.to_thread(self._fetch, sql, args)

    def _fetch(self, sql: str, args: Sequence[object]) -> list[tuple[object, ...]]:
        with self._lock:
            return list(self._conn.execute(sql, tuple(args)).fetchall())

    async def close(self) -> None:
        with self._lock:
            self._conn.close()


class PostgresDatabase:
    """A small asyncpg pool; ``?`` placeholders become ``$1, $2, ...``."""

    def __init__(self, dsn: str, connect_timeout: float = 5.0) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._pool: asyncpg.Pool | None = None

    async def _ready(self) -> asyncpg.Pool:
        if self._pool is None:
            import asyncpg

            self._pool = await asyncpg.create_pool(
                self.dsn, min_size=1, max_size=4, timeout=self.connect_timeout
            )
        return self._pool

    async def run(self, statements: Sequence[Statement]) -> None:
        pool = await self._ready()
        async with pool.acquire() as conn, conn.transaction():
            for sql, args in statements:
                await conn.execute(_numbered(sql), *args)

    async def fetch(self, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        pool = await self._ready()
        rows = await pool.fetch(_numbered(sql), *args)
        return [tuple(row.values()) for row in rows]

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def _numbered(sql: str) -> str:
    parts = sql.split("?")
    return parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], 1))


def open_key_store(url: str, base_dir: Path) -> KeyStore:
    """The store ``url`` names (not yet opened: call ``open``)."""
    scheme = urlsplit(url).scheme
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = next((v for k, v in query if k == "schema"), "public")
        if not _IDENTIFIER.match(schema):
            raise ValueError(f"server.key_store: schema {schema!r} is not a plain SQL name")
        rest = urlencode([(k, v) for k, v in query if k != "schema"])
        dsn = urlunsplit(parts._replace(query=rest))
        tables = {name: f'"{schema}".laneway_{name}' for name in _TABLES}
        return PostgresKeyStore(PostgresDatabase(dsn), tables, schema)
    path = Path(url.removeprefix("sqlite://")) if scheme == "sqlite" else Path(url)
    database = SqliteDatabase(path if path.is_absolute() else base_dir / path)
    return KeyStore(database, {name: f"laneway_{name}" for name in _TABLES})


class PostgresKeyStore(KeyStore):
    """A key store in a PostgreSQL schema, created when missing."""

    def __init__(self, database: PostgresDatabase, tables: dict[str, str], schema: str) -> None:
        super().__init__(database, tables)
        self.schema = schema

    async def open(self, first: Sequence[Statement] = ()) -> None:
        lock = ("SELECT pg_advisory_xact_lock(?)", (_CREATE_LOCK,))
        schema = (f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"', ())
        await super().open([lock, schema, *first])
