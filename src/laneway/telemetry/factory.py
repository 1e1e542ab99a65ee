"""From ``telemetry.url`` to a store: SQLite path, ``postgresql://`` URL, or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from laneway.core.extras import require
from laneway.core.redact import NO_SECRETS, Redactor
from laneway.telemetry.port import TelemetryStore
from laneway.telemetry.spool import Spool, spool_path
from laneway.telemetry.sqlite import SqliteTelemetryStore
from laneway.telemetry.writer import CostFn, TelemetryWriter

POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})
"""``telemetry.url`` schemes written to PostgreSQL (the ``asyncpg`` driver)."""

DISABLED = frozenset({"none", "off", "false", ""})


class TelemetrySettings(Protocol):
    """The ``telemetry:`` block (``laneway.config.TelemetryConfig`` has this shape)."""

    @property
    def url(self) -> str: ...
    @property
    def queue_size(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def flush_interval(self) -> float: ...
    @property
    def spool_bytes(self) -> int: ...
    @property
    def spool_dir(self) -> str | None: ...


def writer_for(
    settings: TelemetrySettings,
    base_dir: Path,
    cost: CostFn,
    redactor: Redactor = NO_SECRETS,
) -> TelemetryWriter | None:
    """The writer the ``telemetry:`` block asks for; ``None`` when telemetry is off.

    ``base_dir`` is the config file's folder (a relative SQLite path starts
    there); ``cost`` prices each record, e.g. ``accounting.Pricer.cost``;
    ``redactor`` cleans each row's text before it is written. Rows the
    database cannot take yet wait in a spool file of at most ``spool_bytes``
    (none when it is 0) in ``spool_dir``, by default ``base_dir``.
    """
    store = store_for_url(settings.url, base_dir)
    if store is None:
        return None
    return TelemetryWriter(
        store,
        cost,
        queue_size=settings.queue_size,
        batch_size=settings.batch_size,
        flush_interval=settings.flush_interval,
        redactor=redactor,
        spool=_spool(settings, base_dir),
    )


def _spool(settings: TelemetrySettings, base_dir: Path) -> Spool | None:
    """This process's spool in ``spool_dir`` (relative to ``base_dir``); ``None`` at 0 bytes."""
    if not settings.spool_bytes:
        return None
    return Spool(spool_path(base_dir / (settings.spool_dir or ".")), settings.spool_bytes)


def store_for_url(url: str, base_dir: Path) -> TelemetryStore | None:
    """The store ``url`` names; ``None`` when telemetry is off.

    ``postgresql://`` (or ``postgres://``) selects PostgreSQL; a ``schema``
    query parameter picks the schema (default ``public``). ``sqlite:///path``
    or a bare path selects SQLite; relative paths are taken from ``base_dir``,
    the folder of the config file.
    """
    if url.strip().lower() in DISABLED:
        return None
    scheme = urlsplit(url).scheme
    if scheme in POSTGRES_SCHEMES:
        dsn, schema = split_schema(url)
        require("asyncpg", "telemetry.url (PostgreSQL)")
        from laneway.telemetry.postgres import PostgresTelemetryStore

        return PostgresTelemetryStore(dsn, schema)
    path = Path(url.removeprefix("sqlite://")) if scheme == "sqlite" else Path(url)
    return SqliteTelemetryStore(path if path.is_absolute() else base_dir / path)


def split_schema(url: str) -> tuple[str, str]:
    """The DSN without laneway's ``schema`` parameter, and that schema."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), "public")
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema
