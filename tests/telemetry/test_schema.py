"""Schema on both backends: explicit column order, append-only migration, spend query."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from laneway.telemetry import COLUMN_NAMES, COLUMNS, TelemetryError
from laneway.telemetry.schema import SCHEMA_VERSION
from tests.telemetry.conftest import Backend

OLD_WIDTH = 21  # an older laneway wrote the first 21 columns


async def opened(backend: Backend) -> None:
    store = backend.store()
    await store.open()
    await store.close()


async def test_fresh_schema_has_the_declared_order(backend: Backend) -> None:
    await opened(backend)
    assert [name for name, _ in await backend.columns()] == list(COLUMN_NAMES)
    await opened(backend)  # reopening is a no-op


async def test_migrated_table_matches_a_fresh_one(new_backend: Callable[[], Backend]) -> None:
    old, fresh = new_backend(), new_backend()
    kind = "sqlite" if old.name == "sqlite" else "postgres"
    columns = ", ".join(f"{c.name} {getattr(c, kind)}" for c in COLUMNS[:OLD_WIDTH])
    await old.execute(f"CREATE TABLE calls ({columns})")
    await old.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    await old.execute("INSERT INTO schema_version VALUES (0)")
    await opened(old)
    await opened(fresh)
    assert await old.columns() == await fresh.columns()


async def test_a_foreign_layout_is_refused(backend: Backend) -> None:
    await backend.execute("CREATE TABLE calls (time REAL, lane TEXT)")
    with pytest.raises(TelemetryError, match="not a prefix"):
        await opened(backend)


async def test_a_newer_schema_is_refused(backend: Backend) -> None:
    await backend.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    await backend.execute(f"INSERT INTO schema_version VALUES ({SCHEMA_VERSION + 1})")
    with pytest.raises(TelemetryError, match="newer"):
        await opened(backend)
