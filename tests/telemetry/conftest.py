"""Both telemetry backends behind one fixture; PostgreSQL is the real one on loopback.

The PostgreSQL tests use a fresh schema per test, dropped afterwards. When the
server is unreachable they skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from laneway.telemetry import PostgresTelemetryStore, SqliteTelemetryStore, TelemetryStore

CANDIDATES = [
    os.environ.get("LANEWAY_TEST_PG", ""),
    "postgresql://postgres@127.0.0.1:5432/test",
    "postgresql://root@127.0.0.1:5432/test",
]


async def _reachable(dsn: str) -> bool:
    try:
        conn = await asyncpg.connect(dsn, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    await conn.close()
    return True


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """A DSN of the loopback PostgreSQL (fails under CI=true when there is none)."""
    for dsn in filter(None, CANDIDATES):
        if asyncio.run(_reachable(dsn)):
            return dsn
    message = f"PostgreSQL unreachable at {[c for c in CANDIDATES if c]}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
async def pg_schemas(pg_dsn: str) -> AsyncIterator[Callable[[], str]]:
    """Makes schema names of this test's own; drops them all afterwards."""
    made: list[str] = []

    def new() -> str:
        made.append(f"lw_test_{uuid.uuid4().hex[:12]}")
        return made[-1]

    yield new
    conn = await asyncpg.connect(pg_dsn)
    for schema in made:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    await conn.close()


class Backend:
    """One database: stores over it, raw SQL on it, and its physical column order."""

    name = ""

    def store(self) -> TelemetryStore:
        raise NotImplementedError

    async def execute(self, sql: str, *args: Any) -> None:
        raise NotImplementedError

    async def columns(self) -> list[tuple[str, str]]:
        raise NotImplementedError


class SqliteBackend(Backend):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    def store(self) -> TelemetryStore:
        return SqliteTelemetryStore(self.path)

    async def execute(self, sql: str, *args: Any) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute(sql, args)
        conn.close()

    async def columns(self) -> list[tuple[str, str]]:
        with sqlite3.connect(self.path) as conn:
            rows = conn.execute("PRAGMA table_info(calls)").fetchall()
        conn.close()
        return [(r[1], r[2]) for r in rows]


class PostgresBackend(Backend):
    name = "postgres"

    def __init__(self, dsn: str, schema: str) -> None:
        self.dsn, self.schema = dsn, schema

    def store(self) -> TelemetryStore:
        return PostgresTelemetryStore(self.dsn, self.schema)

    async def execute(self, sql: str, *args: Any) -> None:
        conn = await asyncpg.connect(self.dsn, server_settings={"search_path": self.schema})
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        await conn.execute(sql, *args)
        await conn.close()

    async def columns(self) -> list[tuple[str, str]]:
        conn = await asyncpg.connect(self.dsn)
        rows = await conn.fetch(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = $1 AND table_name = 'calls' ORDER BY ordinal_position",
            self.schema,
        )
        await conn.close()
        return [(r[0], r[1]) for r in rows]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def new_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Backend]:
    """Makes empty databases of each backend in turn."""
    if request.param == "sqlite":
        names = (tmp_path / f"db{n}.sqlite3" for n in itertools.count())
        return lambda: SqliteBackend(next(names))
    dsn, schemas = request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_schemas")
    return lambda: PostgresBackend(dsn, schemas())


@pytest.fixture
def backend(new_backend: Callable[[], Backend]) -> Backend:
    """An empty database of each backend in turn."""
    return new_backend()
