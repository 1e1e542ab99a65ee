"""Key store fixtures: a SQLite store in the test's folder, or a PostgreSQL one in a
schema of the test's own (``tests.telemetry.conftest`` makes and drops the schemas)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from laneway.state.keys.databases import open_key_store
from laneway.state.keys.store import KeyStore
from tests.server.conftest import http
from tests.telemetry.conftest import pg_dsn, pg_schemas

__all__ = ["http", "pg_dsn", "pg_schemas", "store", "store_url"]


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, pg_dsn: str, pg_schemas: Callable[[], str]
) -> str:
    """A fresh store's URL on each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "keys.sqlite3")
    return f"{pg_dsn}?schema={pg_schemas()}"


@pytest.fixture
async def store(store_url: str, tmp_path: Path) -> AsyncIterator[KeyStore]:
    """The store at ``store_url``, opened."""
    opened = open_key_store(store_url, tmp_path)
    await opened.open()
    yield opened
    await opened.close()
