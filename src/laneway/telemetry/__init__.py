"""Telemetry: one row per call in SQLite or PostgreSQL, written off the request path.

An adapter-layer package: it depends on ``laneway.core`` only (never on
``laneway.config``, ``policy``, ``engine`` or ``accounting``; prices arrive
as a function). The port is ``TelemetryStore``; ``TelemetryWriter`` is the
``CallObserver`` that feeds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.errors import TelemetryError
from laneway.core.lazy import lazy_attributes
from laneway.telemetry.factory import TelemetrySettings, store_for_url, writer_for
from laneway.telemetry.port import CallSample, Row, SpendRow, TelemetryStore
from laneway.telemetry.rows import caller_hash, to_row
from laneway.telemetry.schema import COLUMN_NAMES, COLUMNS, SCHEMA_VERSION
from laneway.telemetry.spooling import WriterStats
from laneway.telemetry.sqlite import SqliteTelemetryStore
from laneway.telemetry.writer import CostFn, TelemetryWriter

if TYPE_CHECKING:
    from laneway.telemetry.postgres import PostgresTelemetryStore

_LAZY = {"PostgresTelemetryStore": "laneway.telemetry.postgres"}

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "SCHEMA_VERSION",
    "CallSample",
    "CostFn",
    "PostgresTelemetryStore",
    "Row",
    "SpendRow",
    "SqliteTelemetryStore",
    "TelemetryError",
    "TelemetrySettings",
    "TelemetryStore",
    "TelemetryWriter",
    "WriterStats",
    "caller_hash",
    "store_for_url",
    "to_row",
    "writer_for",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import heavy adapters on first use: ``laneway serve`` should not pay for unused drivers."""
