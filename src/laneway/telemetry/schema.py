"""The ``calls`` table: explicit, versioned columns, only ever appended to.

Both backends create the same columns in the same order. A database written
by an older laneway has a prefix of ``COLUMNS``; opening it appends the rest
with ``ALTER TABLE ... ADD COLUMN``, so a migrated table and a fresh one have
the same physical order (``SELECT *`` and positional tools agree). Appended
columns are nullable: an old row's new figure is unknown, not 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from laneway.core.errors import TelemetryError
from laneway.telemetry.port import CallSample

SCHEMA_VERSION = 1
TABLE = "calls"
VERSION_TABLE = "schema_version"
BATCH_TABLE = "written_batches"
"""Names of the batches written (with the rows, in one transaction), so a write retried after
its answer was lost is not applied twice; names older than ``BATCH_KEEP`` seconds are pruned."""
BATCH_KEEP = 7 * 86400.0


def batch_table_sql(table: str) -> str:
    """``CREATE TABLE`` of the written batches' names (the same in SQLite and PostgreSQL)."""
    return f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL)"


SPEND_COLUMNS: dict[str, str] = {
    "lane": "lane",
    "source": "source",
    "model": "model",
    "key": "caller",
}


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name and its type on each backend."""

    name: str
    sqlite: str
    postgres: str


def _col(name: str, kind: str) -> Column:
    types = {
        "text": ("TEXT", "TEXT"),
        "int": ("INTEGER", "BIGINT"),
        "real": ("REAL", "DOUBLE PRECISION"),
        "bool": ("INTEGER", "BOOLEAN"),
        "json": ("TEXT", "JSONB"),
    }
    sqlite, postgres = types[kind]
    return Column(name, sqlite, postgres)


COLUMNS: tuple[Column, ...] = tuple(
    _col(name, kind)
    for name, kind in (
        ("time", "real"),  # Unix seconds, call start
        ("request_id", "text"),
        ("lane", "text"),
        ("kind", "text"),
        ("source", "text"),
        ("provider", "text"),
        ("model", "text"),
        ("outcome", "text"),
        ("error", "text"),
        ("status", "int"),
        ("attempts", "int"),
        ("attempts_json", "json"),
        ("pushbacks", "int"),
        ("cache", "text"),
        ("latency_ms", "real"),
        ("ttfb_ms", "real"),
        ("queue_wait_ms", "real"),
        ("prompt_tokens", "int"),
        ("completion_tokens", "int"),
        ("total_tokens", "int"),
        ("reasoning_tokens", "int"),
        ("cached_tokens", "int"),
        ("usage_source", "text"),
        ("cost_usd", "real"),
        ("cost_status", "text"),
        ("embedding_dim", "int"),
        ("caller", "text"),
        ("stream", "bool"),
        ("malformed_events", "int"),
        ("cache_write_tokens", "int"),
    )
)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)


Backend = Literal["sqlite", "postgres"]


def _type(column: Column, backend: Backend) -> str:
    return column.sqlite if backend == "sqlite" else column.postgres


def create_table(table: str, backend: Backend) -> str:
    """``CREATE TABLE`` for a fresh database, every column in order."""
    columns = ", ".join(f"{c.name} {_type(c, backend)}" for c in COLUMNS)
    return f"CREATE TABLE {table} ({columns})"


def add_column(table: str, column: Column, backend: Backend) -> str:
    """``ALTER TABLE ... ADD COLUMN``: the only migration there is."""
    return f"ALTER TABLE {table} ADD COLUMN {column.name} {_type(column, backend)}"


def missing_columns(existing: Sequence[str]) -> tuple[Column, ...]:
    """The columns to append to a table that has ``existing``, in order.

    Raises ``TelemetryError`` unless ``existing`` is a prefix of ``COLUMNS``:
    a table laid out otherwise was not written by laneway and is left alone.
    """
    if tuple(existing) != COLUMN_NAMES[: len(existing)]:
        raise TelemetryError(
            f"table {TABLE} has columns {list(existing)}, not a prefix of laneway's; "
            "refusing to migrate it"
        )
    return COLUMNS[len(existing) :]


def check_version(found: int | None) -> None:
    """Refuse a database written by a newer laneway (its columns mean more than ours)."""
    if found is not None and found > SCHEMA_VERSION:
        raise TelemetryError(
            f"telemetry schema version {found} is newer than this laneway's {SCHEMA_VERSION}"
        )


KNOWN_ZERO_OR_PRICED = "('priced', 'cache_hit', 'not_billed')"
"""The cost statuses whose ``cost_usd`` is a billed figure (0 for a cache hit or a call no
upstream answered)."""


def spend_select(table: str, by: str, placeholder: str) -> str:
    """The spend query, portable between SQLite and PostgreSQL (columns as ``SpendRow``).

    Token sums and ``cost_usd`` cover provider-reported usage only; estimated
    usage is summed apart (``estimated_*``). Every ``SUM`` of unknowns stays
    NULL, so an all-unknown group never reads as 0.
    """
    column = SPEND_COLUMNS.get(by)
    if column is None:
        raise TelemetryError(f"cannot group spend by {by!r}; use one of {sorted(SPEND_COLUMNS)}")
    fields = [
        column,
        "COUNT(*)",
        _count("outcome = 'error'"),
        *(_provider_sum(n) for n in ("prompt_tokens", "completion_tokens", "reasoning_tokens")),
        f"SUM(CASE WHEN cost_status IN {KNOWN_ZERO_OR_PRICED} THEN cost_usd END)",
        _count(f"cost_status IN {KNOWN_ZERO_OR_PRICED}"),
        _count("cost_status = 'unpriced'"),
        _count(
            "(usage_source = 'none' OR usage_source IS NULL) "
            "AND COALESCE(cost_status, '') <> 'not_billed'"
        ),
        _count("usage_source = 'estimated'"),
        "SUM(CASE WHEN cost_status = 'estimated' THEN cost_usd END)",
    ]
    return f"SELECT {', '.join(fields)} FROM {table} WHERE time >= {placeholder} GROUP BY {column}"


CALLS_COLUMNS = ("time", "kind", "stream", "outcome", "latency_ms", "attempts_json", "total_tokens")
"""What ``calls_select`` reads, in ``CallSample`` order."""


def calls_select(table: str, placeholders: tuple[str, str]) -> str:
    """One lane's calls since a time, oldest first (cache hits made no attempt: left out)."""
    since, lane = placeholders
    return (
        f"SELECT {', '.join(CALLS_COLUMNS)} FROM {table} "
        f"WHERE time >= {since} AND lane = {lane} AND attempts > 0 ORDER BY time"
    )


def call_sample(row: Sequence[Any]) -> CallSample:
    """A ``calls_select`` row as a ``CallSample`` (the attempts' JSON parsed)."""
    time, kind, stream, outcome, latency_ms, attempts, tokens = row
    parsed = orjson.loads(attempts) if isinstance(attempts, str | bytes) else attempts or []
    return CallSample(
        float(time),
        str(kind),
        bool(stream),
        str(outcome),
        float(latency_ms),
        tuple(parsed),
        None if tokens is None else int(tokens),
    )


def _count(condition: str) -> str:
    return f"CAST(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END) AS BIGINT)"


def _provider_sum(name: str) -> str:
    return f"CAST(SUM(CASE WHEN usage_source = 'provider' THEN {name} END) AS BIGINT)"
