"""The admin API under ``/admin``: keys and teams as data, their spend, the audit.

Routes (JSON in and out; ``/admin/openapi.json`` describes them):
``POST/GET /admin/keys``, ``GET/PATCH/DELETE /admin/keys/{id}``,
``POST /admin/keys/{id}/rotate``, the same for ``/admin/teams`` (by name),
``GET /admin/spend?by=key|team|lane&since=...`` and ``GET /admin/audit``.
A created or rotated key's secret is in that answer only; the store keeps its
sha256 digest. Every change is one transaction with its audit row (which admin
key, what, when, the record before and after) and a log line; the replica
that made it reloads at once, the others within ``server.key_store_poll``.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import orjson

from laneway.config.models import AdminKeyConfig
from laneway.server import admin_query
from laneway.server.admin_auth import AdminAuth
from laneway.server.admin_input import (
    AdminInvalid,
    KeyBody,
    RotateBody,
    TeamBody,
    expiry,
    merged_limits,
    read,
    seconds,
    within_team,
)
from laneway.server.admin_log import AdminAccessLog, forget, note
from laneway.server.admin_query import TelemetrySpend, error
from laneway.server.admin_render import (
    audit_json,
    iso_time,
    key_json,
    spend_rows,
    stored_key_names,
    team_json,
)
from laneway.server.asgi import Reply
from laneway.server.stored_keys import StoredKeys
from laneway.state.keys.records import (
    AuditEntry,
    Digest,
    KeyRecord,
    Limits,
    Snapshot,
    TeamRecord,
    hash_secret,
    new_secret,
    visible_prefix,
)
from laneway.telemetry.port import SpendRow, TelemetryStore

log = logging.getLogger("laneway.admin")
SpendQuery = Callable[[float, str], Awaitable[list[SpendRow]]]


class Authenticator(Protocol):
    """Who an admin request comes from (``AdminAuth``), or ``AdminInvalid``."""

    def admin(self, headers: Mapping[bytes, bytes], peer: str, route: str) -> str: ...


@dataclass(frozen=True, slots=True)
class AdminRequest:
    """One admin request as the gateway read it."""

    method: str
    path: str
    query: bytes
    headers: Mapping[bytes, bytes]
    body: Mapping[str, Any] | None
    peer: str
    request_id: str = ""


class AdminApi:
    """Answers ``/admin`` over ``stored``'s store; ``spend`` reads telemetry (or ``None``)."""

    def __init__(
        self,
        auth: Authenticator,
        stored: StoredKeys,
        reserved: Sequence[str],
        spend: SpendQuery | None = None,
        clock: Callable[[], float] = time.time,
        access: AdminAccessLog | None = None,
    ) -> None:
        self.auth = auth
        self.stored = stored
        self.store = stored.store
        self.reserved = frozenset(reserved)
        """Names of the config's keys: a stored key may not take one."""
        self.spend = spend
        self.clock = clock
        self.access = access
        """The access log admin requests get a line in (``None``: no access log)."""

    async def aclose(self) -> None:
        """Close the telemetry store spend is read from."""
        if isinstance(self.spend, TelemetrySpend):
            await self.spend.aclose()

    async def answer(self, request: AdminRequest) -> Reply:
        """The reply to ``request`` (errors included, as JSON naming the field)."""
        started, admin = time.monotonic(), None
        forget()
        try:
            admin, reply = await self._answer(request)
        except AdminInvalid as exc:
            reply = error(exc.status, exc.field, str(exc))
        if self.access is not None:
            self.access.write(
                at=self.clock(),
                request_id=request.request_id,
                admin=admin,
                method=request.method,
                path=request.path,
                status=reply.status,
                latency=time.monotonic() - started,
            )
        return reply

    async def _answer(self, request: AdminRequest) -> tuple[str | None, Reply]:
        if request.path == "/admin/openapi.json" and request.method in ("GET", "HEAD"):
            from laneway.server.admin_openapi import OPENAPI

            return None, Reply(200, OPENAPI, [])
        admin = self.auth.admin(request.headers, request.peer, f"{request.method} {request.path}")
        try:
            status, body = await self._dispatch(admin, request)
        except AdminInvalid as exc:
            return admin, error(exc.status, exc.field, str(exc))
        return admin, Reply(status, orjson.dumps(body), [])

    async def _dispatch(self, admin: str, rq: AdminRequest) -> tuple[int, Any]:
        parts = rq.path.removeprefix("/admin").strip("/").split("/")
        what, rest = parts[0], parts[1:]
        if what == "keys":
            return await self._keys(admin, rq, rest)
        if what == "teams":
            return await self._teams(admin, rq, rest)
        if what == "spend" and not rest and rq.method == "GET":
            return 200, await self._spend(admin_query.query(rq.query))
        if what == "audit" and not rest and rq.method == "GET":
            return 200, [audit_json(e) for e in await self.store.audit(admin_query.limit(rq.query))]
        raise AdminInvalid("", f"no such admin route: {rq.method} {rq.path}", 404)

    async def _keys(self, admin: str, rq: AdminRequest, rest: list[str]) -> tuple[int, Any]:
        snap = await self.store.snapshot()
        if not rest:
            if rq.method == "POST":
                return 201, await self._create_key(admin, snap, read(KeyBody, rq.body or {}))
            if rq.method == "GET":
                spent, used = await self._spent(snap), await self.stored.use()
                return 200, [key_json(k, spent.get(k.name), used) for k in snap.keys.values()]
        elif len(rest) == 1 or (len(rest) == 2 and rest[1] == "rotate"):
            key = snap.keys.get(rest[0])
            if key is None:
                raise AdminInvalid("id", f"no key {rest[0]!r}", 404)
            if len(rest) == 2 and rq.method == "POST":
                body = read(RotateBody, rq.body or {})
                return 200, await self._rotate(admin, key, seconds("grace", body.grace))
            if len(rest) == 1:
                return await self._key(admin, rq, snap, key)
        raise AdminInvalid("", f"no such admin route: {rq.method} {rq.path}", 405)

    async def _key(
        self, admin: str, rq: AdminRequest, snap: Snapshot, key: KeyRecord
    ) -> tuple[int, Any]:
        if rq.method == "GET":
            spent, used = await self._spent(snap), await self.stored.use()
            return 200, key_json(key, spent.get(key.name), used)
        if rq.method == "DELETE":
            await self.store.delete_key(key.id, self._audit(admin, "key.delete", key.id, key))
            await self._changed(rq, admin, "key.delete", key.id)
            return 200, {"id": key.id, "deleted": True}
        if rq.method == "PATCH":
            body = read(KeyBody, rq.body or {})
            updated = self._key_record(snap, body, key)
            await self.store.put_key(
                updated, self._audit(admin, "key.update", key.id, key, updated)
            )
            await self._changed(rq, admin, "key.update", key.id)
            return 200, key_json(updated)
        raise AdminInvalid("", f"{rq.path} takes GET, PATCH or DELETE", 405)

    async def _create_key(self, admin: str, snap: Snapshot, body: KeyBody) -> dict[str, Any]:
        if body.name is None:
            raise AdminInvalid("name", "Field required")
        secret = new_secret()
        blank = KeyRecord(
            id=f"key_{secrets.token_hex(8)}",
            name=body.name,
            prefix=visible_prefix(secret),
            created_at=self.clock(),
        )
        record = self._key_record(snap, body, blank)
        entry = self._audit(admin, "key.create", record.id, None, record)
        await self.store.put_key(record, entry, [Digest(hash_secret(secret), record.id)])
        await self._refresh()
        note("key.create", record.id)
        log.info("admin %s: key.create %s (%s)", admin, record.id, record.name)
        return {**key_json(record), "key": secret}

    def _key_record(self, snap: Snapshot, body: KeyBody, base: KeyRecord) -> KeyRecord:
        fields = body.model_fields_set
        name = body.name if body.name is not None else base.name
        if name != base.name or base.id not in snap.keys:
            taken = name in self.reserved or any(k.name == name for k in snap.keys.values())
            if taken:
                raise AdminInvalid("name", f"a key is already named {name!r}", 409)
        team_name = body.team if "team" in fields else base.team
        team = None
        if team_name is not None:
            team = snap.teams.get(team_name)
            if team is None:
                raise AdminInvalid("team", f"no team {team_name!r}")
        own = within_team(merged_limits(body, base.limits, self.stored.lanes), team)
        expires = expiry(body, self.clock())
        return replace(
            base,
            name=name,
            team=team_name,
            limits=own,
            expires_at=base.expires_at if expires is False else expires,
            blocked=base.blocked if body.blocked is None else body.blocked,
            metadata=base.metadata if body.metadata is None else body.metadata,
        )

    async def _rotate(self, admin: str, key: KeyRecord, grace: float) -> dict[str, Any]:
        secret = new_secret()
        rotated = replace(key, prefix=visible_prefix(secret))
        entry = self._audit(admin, "key.rotate", key.id, key, rotated)
        until = self.clock() + grace
        await self.store.rotate(rotated, Digest(hash_secret(secret), key.id), until, entry)
        await self._refresh()
        note("key.rotate", key.id)
        log.info("admin %s: key.rotate %s (old secret valid %.0f s)", admin, key.id, grace)
        return {**key_json(rotated), "key": secret, "previous_valid_until": iso_time(until)}

    async def _teams(self, admin: str, rq: AdminRequest, rest: list[str]) -> tuple[int, Any]:
        snap = await self.store.snapshot()
        if not rest and rq.method == "GET":
            return 200, [team_json(t) for t in snap.teams.values()]
        if not rest and rq.method == "POST":
            body = read(TeamBody, rq.body or {})
            if body.name is None:
                raise AdminInvalid("name", "Field required")
            if body.name in snap.teams:
                raise AdminInvalid("name", f"a team is already named {body.name!r}", 409)
            team = _team(body, TeamRecord(body.name, created_at=self.clock()), self.stored.lanes)
            await self.store.put_team(
                team, self._audit(admin, "team.create", team.name, None, team)
            )
            await self._changed(rq, admin, "team.create", team.name)
            return 201, team_json(team)
        if len(rest) == 1 and rest[0] in snap.teams:
            return await self._team(admin, rq, snap, snap.teams[rest[0]])
        if len(rest) == 1:
            raise AdminInvalid("name", f"no team {rest[0]!r}", 404)
        raise AdminInvalid("", f"no such admin route: {rq.method} {rq.path}", 405)

    async def _team(
        self, admin: str, rq: AdminRequest, snap: Snapshot, team: TeamRecord
    ) -> tuple[int, Any]:
        if rq.method == "GET":
            return 200, team_json(team, [k.id for k in snap.keys.values() if k.team == team.name])
        if rq.method == "DELETE":
            if any(k.team == team.name for k in snap.keys.values()):
                raise AdminInvalid("name", f"team {team.name!r} still has keys", 409)
            await self.store.delete_team(
                team.name, self._audit(admin, "team.delete", team.name, team)
            )
            await self._changed(rq, admin, "team.delete", team.name)
            return 200, {"name": team.name, "deleted": True}
        if rq.method == "PATCH":
            body = read(TeamBody, rq.body or {})
            if body.name is not None and body.name != team.name:
                raise AdminInvalid("name", "a team's name cannot change")
            updated = _team(body, team, self.stored.lanes)
            entry = self._audit(admin, "team.update", team.name, team, updated)
            await self.store.put_team(updated, entry)
            await self._changed(rq, admin, "team.update", team.name)
            return 200, team_json(updated)
        raise AdminInvalid("", f"{rq.path} takes GET, PATCH or DELETE", 405)

    async def _spend(self, query: Mapping[str, str]) -> list[dict[str, Any]]:
        by = query.get("by", "key")
        if by not in ("key", "team", "lane"):
            raise AdminInvalid("by", f"group by key, team or lane, not {by!r}")
        since = 0.0 if "since" not in query else admin_query.since(query["since"], self.clock())
        if self.spend is None:
            raise AdminInvalid("by", "spend needs telemetry (telemetry.url is none)", 409)
        rows = await self.spend(since, "lane" if by == "lane" else "key")
        snap = await self.store.snapshot()
        return spend_rows(rows, by, snap, self.reserved)

    async def _spent(self, snap: Snapshot) -> dict[str, float]:
        """USD spent by each stored key's name: carried spend plus recorded calls."""
        spent = {k.name: k.spend for k in snap.keys.values()}
        if self.spend is not None:
            names = stored_key_names(snap)
            for row in await self.spend(0.0, "key"):
                name = names.get(row.group or "")
                if name is not None:
                    spent[name] += (row.cost_usd or 0.0) + (row.estimated_cost_usd or 0.0)
        return spent

    def _audit(
        self, admin: str, action: str, target: str, before: object, after: object = None
    ) -> AuditEntry:
        return AuditEntry(self.clock(), admin, action, target, _record(before), _record(after))

    async def _changed(self, rq: AdminRequest, admin: str, action: str, target: str) -> None:
        await self._refresh()
        note(action, target)
        log.info("admin %s: %s %s (request %s)", admin, action, target, rq.request_id or "-")

    async def _refresh(self) -> None:
        await self.stored.changed()


def admin_api(
    admin_keys: Sequence[AdminKeyConfig],
    environ: Mapping[str, str],
    stored: StoredKeys,
    reserved: Sequence[str],
    telemetry: TelemetryStore | None,
    access: AdminAccessLog | None = None,
) -> AdminApi:
    """The admin API over ``stored``, with spend from ``telemetry`` (``None``: no spend),
    each request written to ``access`` (the access log's stream)."""
    auth = AdminAuth(admin_keys, environ, time.monotonic)
    spend = None if telemetry is None else TelemetrySpend(telemetry)
    return AdminApi(auth, stored, reserved, spend, access=access)


def _team(body: TeamBody, base: TeamRecord, lanes: Sequence[str]) -> TeamRecord:
    own: Limits = merged_limits(body, base.limits, lanes)
    return replace(
        base,
        limits=own,
        blocked=base.blocked if body.blocked is None else body.blocked,
        metadata=base.metadata if body.metadata is None else body.metadata,
    )


def _record(value: object) -> dict[str, Any] | None:
    if isinstance(value, KeyRecord):
        return key_json(value)
    if isinstance(value, TeamRecord):
        return team_json(value)
    return None
