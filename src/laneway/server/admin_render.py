"""Keys, teams, audit entries and spend as the admin API's JSON (never a secret)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from laneway.state.keys.records import AuditEntry, KeyRecord, Limits, Snapshot, TeamRecord
from laneway.telemetry.port import SpendRow
from laneway.telemetry.rows import caller_hash


def iso_time(at: float | None) -> str | None:
    if at is None:
        return None
    return dt.datetime.fromtimestamp(at, dt.UTC).isoformat().replace("+00:00", "Z")


def _limits(limits: Limits) -> dict[str, Any]:
    budget = None
    if limits.budget is not None:
        budget = {"amount": limits.budget, "period": limits.period}
    return {
        "lanes": list(limits.lanes),
        "rpm": limits.rpm,
        "tpm": limits.tpm,
        "max_concurrency": limits.max_concurrency,
        "budget": budget,
    }


def key_json(
    key: KeyRecord, spend: float | None = None, used: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """A key as listed: its visible prefix, never its secret or digest; ``used`` is when each
    key (by id) was last used, for a listing's ``last_used_at``."""
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "team": key.team,
        **_limits(key.limits),
        "expires_at": iso_time(key.expires_at),
        "blocked": key.blocked,
        "metadata": dict(key.metadata),
        "created_at": iso_time(key.created_at),
        "spend_usd": key.spend if spend is None else spend,
        **({} if used is None else {"last_used_at": iso_time(used.get(key.id))}),
    }


def team_json(team: TeamRecord, keys: Sequence[str] | None = None) -> dict[str, Any]:
    body = {
        "name": team.name,
        **_limits(team.limits),
        "blocked": team.blocked,
        "metadata": dict(team.metadata),
        "created_at": iso_time(team.created_at),
    }
    if keys is not None:
        body["keys"] = list(keys)
    return body


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    return {
        "at": iso_time(entry.at),
        "admin": entry.admin,
        "action": entry.action,
        "target": entry.target,
        "before": entry.before,
        "after": entry.after,
    }


def stored_key_names(snap: Snapshot, others: Iterable[str] = ()) -> dict[str, str]:
    """Key names by the hash telemetry records a caller as (``caller_hash``)."""
    names = [*(k.name for k in snap.keys.values()), *others]
    return {caller_hash(name): name for name in names}


def spend_rows(
    rows: Sequence[SpendRow], by: str, snap: Snapshot, others: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Recorded spend grouped ``by`` key (its name where known: ``others`` are the config's
    keys), team (keys' rows summed by their team) or lane."""
    names = stored_key_names(snap, others)
    teams = {k.name: k.team for k in snap.keys.values()}
    groups: dict[str | None, dict[str, Any]] = {}
    for row in rows:
        group = names.get(row.group or "", row.group) if by != "lane" else row.group
        if by == "team":
            group = teams.get(group or "")
        if by == "team" and group is None:
            continue
        out = groups.setdefault(group, {by: group, "calls": 0, "errors": 0, "cost_usd": 0.0})
        out["calls"] += row.calls
        out["errors"] += row.errors
        out["cost_usd"] += (row.cost_usd or 0.0) + (row.estimated_cost_usd or 0.0)
    if by == "team":
        budgets = {t.name: t.limits for t in snap.teams.values()}
        for name, out in groups.items():
            limits = budgets.get(name or "")
            out["budget"] = None if limits is None else _limits(limits)["budget"]
    return list(groups.values())
