"""The key store: stored keys, teams, their digests and the admin audit, in SQL.

Every change bumps one version number in the same transaction as the
change and its audit row, so a replica that reads the version knows when
to reload (``server.stored_keys``). The SQL is written once for SQLite and
PostgreSQL (``?`` placeholders; the PostgreSQL driver numbers them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import orjson

from laneway.state.keys.records import (
    AuditEntry,
    Digest,
    KeyRecord,
    Limits,
    Snapshot,
    TeamRecord,
)

Statement = tuple[str, Sequence[object]]
_LIMIT_COLUMNS = "lanes, rpm, tpm, max_concurrency, budget, period"
_KEY_COLUMNS = (
    f"id, name, prefix, team, {_LIMIT_COLUMNS}, expires_at, blocked, metadata, created_at, spend"
)
_TEAM_COLUMNS = f"name, {_LIMIT_COLUMNS}, blocked, metadata, created_at"


class Database(Protocol):
    """What the store needs of a SQL database."""

    async def run(self, statements: Sequence[Statement]) -> None:
        """Run ``statements`` in one transaction."""

    async def fetch(self, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        """The rows of one query."""

    async def close(self) -> None:
        """Release the connection(s)."""


def _tables(t: Mapping[str, str]) -> list[str]:
    limits = (
        "lanes TEXT NOT NULL, rpm INTEGER, tpm INTEGER, max_concurrency INTEGER, "
        "budget DOUBLE PRECISION, period TEXT"
    )
    return [
        f"CREATE TABLE IF NOT EXISTS {t['keys']} (id TEXT PRIMARY KEY, name TEXT NOT NULL "
        f"UNIQUE, prefix TEXT NOT NULL, team TEXT, {limits}, expires_at DOUBLE PRECISION, "
        "blocked BOOLEAN NOT NULL, metadata TEXT NOT NULL, created_at DOUBLE PRECISION NOT "
        "NULL, spend DOUBLE PRECISION NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {t['teams']} (name TEXT PRIMARY KEY, {limits}, "
        "blocked BOOLEAN NOT NULL, metadata TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {t['digests']} (sha256 TEXT PRIMARY KEY, key_id TEXT "
        "NOT NULL, valid_until DOUBLE PRECISION)",
        f"CREATE TABLE IF NOT EXISTS {t['audit']} (at DOUBLE PRECISION NOT NULL, admin TEXT "
        "NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, before TEXT, after TEXT)",
        f"CREATE TABLE IF NOT EXISTS {t['version']} (id INTEGER PRIMARY KEY, version BIGINT "
        "NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {t['key_use']} (key_id TEXT PRIMARY KEY, last_used DOUBLE "
        "PRECISION NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {t['team_spend']} (name TEXT PRIMARY KEY, spend DOUBLE "
        "PRECISION NOT NULL)",
    ]


class KeyStore:
    """Keys, teams, digests and audit rows in ``database``'s tables (named by ``tables``)."""

    def __init__(self, database: Database, tables: Mapping[str, str]) -> None:
        self.database = database
        self.t = dict(tables)

    async def open(self, first: Sequence[Statement] = ()) -> None:
        """Create the tables where missing (an existing store is kept as it is), after
        ``first`` in the same transaction."""
        version = (
            f"INSERT INTO {self.t['version']} VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
            (),
        )
        await self.database.run([*first, *((sql, ()) for sql in _tables(self.t)), version])

    async def close(self) -> None:
        await self.database.close()

    async def version(self) -> int:
        """The number every change raises by one."""
        rows = await self.database.fetch(f"SELECT version FROM {self.t['version']} WHERE id = 1")
        return int(_num(rows[0][0]))

    async def snapshot(self) -> Snapshot:
        """Every key, team and digest, with the version they were read at."""
        version = await self.version()
        keys = await self.database.fetch(f"SELECT {_KEY_COLUMNS} FROM {self.t['keys']}")
        teams = await self.database.fetch(f"SELECT {_TEAM_COLUMNS} FROM {self.t['teams']}")
        spent = await self.database.fetch(f"SELECT name, spend FROM {self.t['team_spend']}")
        digests = await self.database.fetch(
            f"SELECT sha256, key_id, valid_until FROM {self.t['digests']}"
        )
        team_spend = {str(row[0]): _num(row[1]) for row in spent}
        return Snapshot(
            version,
            {str(row[0]): _key(row) for row in keys},
            {str(row[0]): _team(row, team_spend.get(str(row[0]), 0.0)) for row in teams},
            tuple(Digest(str(d[0]), str(d[1]), _opt(d[2])) for d in digests),
        )

    async def put_key(
        self, key: KeyRecord, entry: AuditEntry, digests: Sequence[Digest] = ()
    ) -> None:
        """Insert or replace ``key`` (and add ``digests``), audited as ``entry``."""
        statements = [self._key_upsert(key), *(self._digest_insert(d) for d in digests)]
        await self._change(statements, entry)

    async def rotate(
        self, key: KeyRecord, new: Digest, grace_until: float, entry: AuditEntry
    ) -> None:
        """Store ``key`` (its new prefix) and add ``new``; the key's older digests stay valid
        until ``grace_until``."""
        expire = (
            f"UPDATE {self.t['digests']} SET valid_until = ? WHERE key_id = ? AND "
            "(valid_until IS NULL OR valid_until > ?)",
            (grace_until, key.id, grace_until),
        )
        await self._change([self._key_upsert(key), expire, self._digest_insert(new)], entry)

    def _key_upsert(self, key: KeyRecord) -> Statement:
        row = _key_row(key)
        marks = ", ".join("?" * len(row))
        sql = (
            f"INSERT INTO {self.t['keys']} ({_KEY_COLUMNS}) VALUES ({marks}) ON CONFLICT (id) "
            f"DO UPDATE SET {_updates(_KEY_COLUMNS)}"
        )
        return (sql, row)

    async def delete_key(self, key_id: str, entry: AuditEntry) -> None:
        """Remove the key and its digests: its secrets authenticate no one."""
        await self._change(
            [
                (f"DELETE FROM {self.t['digests']} WHERE key_id = ?", (key_id,)),
                (f"DELETE FROM {self.t['keys']} WHERE id = ?", (key_id,)),
                (f"DELETE FROM {self.t['key_use']} WHERE key_id = ?", (key_id,)),
            ],
            entry,
        )

    async def mark_used(self, used: Mapping[str, float]) -> None:
        """Record when each key (by id) was last used, keeping the latest time any replica
        wrote. No version bump and no audit row: use is not a change of the keys."""
        table = self.t["key_use"]
        sql = (
            f"INSERT INTO {table} AS u (key_id, last_used) VALUES (?, ?) ON CONFLICT (key_id) "
            "DO UPDATE SET last_used = CASE WHEN excluded.last_used > u.last_used "
            "THEN excluded.last_used ELSE u.last_used END"
        )
        await self.database.run([(sql, (key_id, at)) for key_id, at in used.items()])

    async def last_used(self) -> dict[str, float]:
        """When each key (by id) was last used, as far as any replica recorded it."""
        rows = await self.database.fetch(f"SELECT key_id, last_used FROM {self.t['key_use']}")
        return {str(row[0]): _num(row[1]) for row in rows}

    async def put_team(self, team: TeamRecord, entry: AuditEntry) -> None:
        """Insert or replace ``team``, audited as ``entry``."""
        await self._change([self._team_upsert(team)], entry)

    def _team_upsert(self, team: TeamRecord) -> Statement:
        row = _team_row(team)
        marks = ", ".join("?" * len(row))
        sql = (
            f"INSERT INTO {self.t['teams']} ({_TEAM_COLUMNS}) VALUES ({marks}) ON CONFLICT "
            f"(name) DO UPDATE SET {_updates(_TEAM_COLUMNS)}"
        )
        return (sql, row)

    def _team_spend_upsert(self, team: TeamRecord) -> Statement:
        """The team's spend from before laneway (``TeamRecord.spend``): written by imports
        only, kept apart so an admin's edit of the team leaves it as it is."""
        return (
            f"INSERT INTO {self.t['team_spend']} (name, spend) VALUES (?, ?) ON CONFLICT (name) "
            "DO UPDATE SET spend = excluded.spend",
            (team.name, team.spend),
        )

    async def delete_team(self, name: str, entry: AuditEntry) -> None:
        statements: list[Statement] = [
            (f"DELETE FROM {self.t[table]} WHERE name = ?", (name,))
            for table in ("team_spend", "teams")
        ]
        await self._change(statements, entry)

    async def audit(self, limit: int = 100) -> list[AuditEntry]:
        """The latest ``limit`` admin actions, newest first."""
        rows = await self.database.fetch(
            f"SELECT at, admin, action, target, before, after FROM {self.t['audit']} "
            "ORDER BY at DESC LIMIT ?",
            (limit,),
        )
        return [
            AuditEntry(_num(r[0]), str(r[1]), str(r[2]), str(r[3]), _json(r[4]), _json(r[5]))
            for r in rows
        ]

    def _digest_insert(self, digest: Digest) -> Statement:
        return (
            f"INSERT INTO {self.t['digests']} (sha256, key_id, valid_until) VALUES (?, ?, ?)",
            (digest.sha256, digest.key_id, digest.valid_until),
        )

    async def put_imported(
        self,
        teams: Sequence[TeamRecord],
        keys: Sequence[tuple[KeyRecord, Sequence[Digest]]],
        entries: Sequence[AuditEntry],
    ) -> None:
        """Insert or replace ``teams``, then ``keys`` with their new digests, audited as
        ``entries``: one transaction and one version change, so an import (``laneway import
        litellm --database``) lands whole or not at all and every replica reloads it once."""
        statements = [self._team_upsert(team) for team in teams]
        statements += [self._team_spend_upsert(team) for team in teams]
        for key, digests in keys:
            statements += [self._key_upsert(key), *(self._digest_insert(d) for d in digests)]
        await self._change(statements, *entries)

    async def _change(self, statements: list[Statement], *entries: AuditEntry) -> None:
        audits = [
            (
                f"INSERT INTO {self.t['audit']} (at, admin, action, target, before, after) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (e.at, e.admin, e.action, e.target, _dump(e.before), _dump(e.after)),
            )
            for e in entries
        ]
        bump = (f"UPDATE {self.t['version']} SET version = version + 1 WHERE id = 1", ())
        await self.database.run([*statements, *audits, bump])


def _updates(columns: str) -> str:
    names = [c.strip() for c in columns.split(",")][1:]
    return ", ".join(f"{n} = excluded.{n}" for n in names)


def _limits_row(limits: Limits) -> list[object]:
    return [
        orjson.dumps(list(limits.lanes)).decode(),
        limits.rpm,
        limits.tpm,
        limits.max_concurrency,
        limits.budget,
        limits.period,
    ]


def _limits(row: Sequence[object]) -> Limits:
    lanes = orjson.loads(str(row[0]))
    rpm, tpm, concurrency = (None if v is None else int(_num(v)) for v in row[1:4])
    period = None if row[5] is None else str(row[5])
    return Limits(tuple(lanes), rpm, tpm, concurrency, _opt(row[4]), period)


def _key_row(key: KeyRecord) -> tuple[object, ...]:
    return (
        key.id,
        key.name,
        key.prefix,
        key.team,
        *_limits_row(key.limits),
        key.expires_at,
        key.blocked,
        _dump(key.metadata),
        key.created_at,
        key.spend,
    )


def _key(row: Sequence[object]) -> KeyRecord:
    team = None if row[3] is None else str(row[3])
    return KeyRecord(
        id=str(row[0]),
        name=str(row[1]),
        prefix=str(row[2]),
        team=team,
        limits=_limits(row[4:10]),
        expires_at=_opt(row[10]),
        blocked=bool(row[11]),
        metadata=_json(row[12]) or {},
        created_at=_num(row[13]),
        spend=_num(row[14]),
    )


def _team_row(team: TeamRecord) -> tuple[object, ...]:
    limits = _limits_row(team.limits)
    return (team.name, *limits, team.blocked, _dump(team.metadata), team.created_at)


def _team(row: Sequence[object], spend: float) -> TeamRecord:
    return TeamRecord(
        name=str(row[0]),
        limits=_limits(row[1:7]),
        blocked=bool(row[7]),
        metadata=_json(row[8]) or {},
        created_at=_num(row[9]),
        spend=spend,
    )


def _num(value: object) -> float:
    assert isinstance(value, int | float)
    return float(value)


def _opt(value: object) -> float | None:
    return None if value is None else _num(value)


def _dump(value: Mapping[str, object] | None) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _json(value: object) -> dict[str, object] | None:
    if value is None:
        return None
    loaded = orjson.loads(str(value))
    assert isinstance(loaded, dict)
    return loaded
