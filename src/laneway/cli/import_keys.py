"""``laneway import litellm --database URL``: LiteLLM's keys and teams into laneway's key store.

The I/O of the key import: read the rows of LiteLLM's proxy database (PostgreSQL,
``LiteLLM_VerificationToken`` and ``LiteLLM_TeamTable``, with ``LiteLLM_UserTable`` and
``LiteLLM_OrganizationTable`` for metadata; ``?schema=NAME`` as Prisma reads it), hand them
to the pure translator (``laneway.migrate.litellm.keys``), and write what it made into the
key store through the store's own API, in one transaction with an audit row per key and
team (``import:litellm:<user>``). Importing again updates the same keys (found by digest)
and teams (by name). Nothing here prints a digest or a password: the database URL is
shown without its password.
"""

from __future__ import annotations

import getpass
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from laneway.migrate.litellm.keys import (
    CarriedKey,
    CarriedLimits,
    CarriedTeam,
    KeysTranslation,
    LiteLLMRows,
)
from laneway.server.admin_render import key_json, team_json
from laneway.state.keys.records import AuditEntry, Digest, KeyRecord, Limits, TeamRecord
from laneway.telemetry.factory import split_schema

if TYPE_CHECKING:
    import asyncpg

    from laneway.state.keys.store import KeyStore

REQUIRED = ("LiteLLM_VerificationToken", "LiteLLM_TeamTable")
OPTIONAL = ("LiteLLM_UserTable", "LiteLLM_OrganizationTable")
CONNECT_TIMEOUT = 10.0


class ImportFailed(Exception):
    """The database cannot be read, or the store cannot be written: the message says which."""


def shown(url: str) -> str:
    """``url`` without its password (for messages)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}:***@" if parts.username else ":***@"
        return urlunsplit(parts._replace(netloc=f"{user}{host}{port}"))
    except ValueError:
        return "(the database URL)"


async def read_rows(url: str) -> LiteLLMRows:
    """Every row of LiteLLM's key, team, user and organisation tables at ``url``."""
    import asyncpg

    dsn, schema = split_schema(url)
    try:
        conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, asyncpg.PostgresError, ValueError) as exc:
        raise ImportFailed(f"cannot connect to {shown(url)}: {_reason(exc)}") from None
    try:
        for kind in ("json", "jsonb"):
            await conn.set_type_codec(
                kind, encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
            )
        present = await _tables(conn, schema)
        missing = [t for t in REQUIRED if t not in present]
        if missing:
            raise ImportFailed(
                f"{shown(url)}: schema {schema!r} has no {', '.join(missing)}: not a LiteLLM "
                "proxy database (give its schema as ?schema=NAME)"
            )
        found = {t: await _rows(conn, schema, t) for t in (*REQUIRED, *OPTIONAL) if t in present}
    except asyncpg.PostgresError as exc:
        raise ImportFailed(f"{shown(url)}: {_reason(exc)}") from None
    finally:
        await conn.close()
    return LiteLLMRows(*(found.get(t, []) for t in (*REQUIRED, *OPTIONAL)))


async def _tables(conn: asyncpg.Connection, schema: str) -> set[str]:
    rows = await conn.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema
    )
    return {str(r["table_name"]) for r in rows}


async def _rows(conn: asyncpg.Connection, schema: str, table: str) -> list[dict[str, object]]:
    quoted = '"' + schema.replace('"', '""') + '"."' + table + '"'
    return [
        {k: _plain(v) for k, v in row.items()}
        for row in await conn.fetch(f"SELECT * FROM {quoted}")
    ]


def _plain(value: object) -> object:
    """A column's value as the translator reads it: times as epoch seconds (a time without a
    zone is UTC, as Prisma writes it), numbers as numbers."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, Decimal):
        return float(value)
    return value


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0]


@dataclass(frozen=True, slots=True)
class Stored:
    """What the import wrote: counts, and the keys renamed because their name was taken."""

    keys: int
    teams: int
    renamed: list[str]


async def write_store(
    url: str, base: Path, made: KeysTranslation, reserved: Sequence[str], now: float
) -> Stored:
    """``store_keys`` into the store at ``url`` (relative paths from ``base``)."""
    import sqlite3

    import asyncpg

    from laneway.state.keys.databases import open_key_store

    try:
        store = open_key_store(url, base)
    except (OSError, ValueError, sqlite3.Error) as exc:
        raise ImportFailed(f"cannot open the key store {shown(url)}: {_reason(exc)}") from None
    try:
        return await store_keys(store, made, reserved, now)
    except (OSError, TimeoutError, sqlite3.Error, asyncpg.PostgresError) as exc:
        raise ImportFailed(f"cannot write the key store {shown(url)}: {_reason(exc)}") from None
    finally:
        await store.close()


async def store_keys(
    store: KeyStore, made: KeysTranslation, reserved: Sequence[str], now: float
) -> Stored:
    """Write ``made``'s teams and keys into ``store`` (opened here, closed by the caller)."""
    await store.open()
    snap = await store.snapshot()
    admin = f"import:litellm:{getpass.getuser()}"
    owner = {d.sha256: d.key_id for d in snap.digests}
    taken = set(reserved) | {k.name for k in snap.keys.values()}
    teams = [_team_record(t, now) for t in made.teams]
    renamed: list[str] = []
    keys: list[tuple[KeyRecord, Sequence[Digest]]] = []
    for carried in made.keys:
        known = owner.get(carried.sha256)
        before = snap.keys.get(known) if known else None
        if before is not None:
            taken.discard(before.name)
        name = _free(carried.name, taken)
        if name != carried.name:
            renamed.append(f"{carried.name} -> {name}")
        taken.add(name)
        record = _key_record(carried, name, known or f"key_{secrets.token_hex(8)}", now)
        keys.append((record, () if known else (Digest(carried.sha256, record.id),)))
    entries = [
        *(
            AuditEntry(
                now,
                admin,
                "team.import",
                t.name,
                _json(snap.teams.get(t.name), team_json),
                team_json(t),
            )
            for t in teams
        ),
        *(
            AuditEntry(
                now, admin, "key.import", k.id, _json(snap.keys.get(k.id), key_json), key_json(k)
            )
            for k, _ in keys
        ),
    ]
    await store.put_imported(teams, keys, entries)
    return Stored(len(keys), len(teams), renamed)


def _json(record: Any, render: Any) -> Mapping[str, object] | None:
    return None if record is None else render(record)


def _free(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        found = f"{name} (litellm)" if n == 1 else f"{name} (litellm #{n})"
        n += 1
    return found


def _limits(carried: CarriedLimits) -> Limits:
    return Limits(
        carried.lanes,
        carried.rpm,
        carried.tpm,
        carried.max_concurrency,
        carried.budget,
        carried.period,
    )


def _team_record(carried: CarriedTeam, now: float) -> TeamRecord:
    """The stored team; as a key's, its spend counts in the budget period of ``now``."""
    return TeamRecord(
        carried.name,
        _limits(carried.limits),
        carried.blocked,
        dict(carried.metadata),
        now,
        carried.spend,
    )


def _key_record(carried: CarriedKey, name: str, key_id: str, now: float) -> KeyRecord:
    """The stored key; ``created_at`` is the import's time: the carried spend counts in the
    budget period the key came to laneway in."""
    return KeyRecord(
        id=key_id,
        name=name,
        prefix=carried.prefix,
        team=carried.team,
        limits=_limits(carried.limits),
        expires_at=carried.expires_at,
        blocked=carried.blocked,
        metadata=dict(carried.metadata),
        created_at=now,
        spend=carried.spend,
    )


def store_setting(url: str, base: Path | None) -> tuple[str, dict[str, str]]:
    """``server.key_store`` for the written config, and the variables it references: a
    password is never written, but read from ``LANEWAY_KEY_STORE_PASSWORD``; a relative
    SQLite path is kept relative to the config's folder (made absolute for stdout)."""
    if "://" not in url or url.startswith("sqlite://"):
        path = Path(url.removeprefix("sqlite://"))
        return (str(path) if base is not None or path.is_absolute() else str(path.resolve())), {}
    parts = urlsplit(url)
    if parts.password is None:
        return url, {}
    user = f"{parts.username}:" if parts.username else ":"
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{user}${{{PASSWORD_ENV}}}@{parts.hostname}{port}"
    return urlunsplit(parts._replace(netloc=netloc)), {PASSWORD_ENV: "placeholder"}


PASSWORD_ENV = "LANEWAY_KEY_STORE_PASSWORD"
