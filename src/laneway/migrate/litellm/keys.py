"""``translate_keys``: the rows of LiteLLM's proxy database in, laneway's keys and teams out.

Pure: the rows come as mappings of column to value (times as epoch seconds, JSON decoded),
read by the caller (``laneway.cli.import_keys``); nothing here touches a database. A key
keeps LiteLLM's sha256 hex digest of its secret (``hash_token`` in
``litellm/proxy/utils.py``: ``hashlib.sha256(token.encode()).hexdigest()``, the form laneway
stores), so the caller's unchanged ``sk-...`` key answers. It carries its alias (as its
name), its models as lanes (``key_models``), ``rpm_limit``, ``tpm_limit``,
``max_parallel_requests``, ``max_budget`` per ``budget_duration`` (``key_budgets``), its
spend so far, ``expires``, ``blocked`` and its team with the team's own limits. Users and
organisations go into metadata. Every value set that is not carried is reported with why
(``key_columns``), naming the keys and teams it concerns: never a digest or a secret, only
names and LiteLLM's own display form of a key (``sk-...AbCd``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from laneway.migrate.litellm import key_budgets, key_columns
from laneway.migrate.litellm.key_models import EVERY, Catalog, Reach, reach

Row = Mapping[str, object]
DIGEST = re.compile(r"^[0-9a-f]{64}$")
DISPLAY = re.compile(r"^sk-\.\.\.[A-Za-z0-9_-]{0,4}$")
"""LiteLLM's ``key_name``: ``abbreviate_api_key``'s ``sk-...`` and the secret's last 4."""
LLM_ROUTES = frozenset({"llm_api_routes", "openai_routes", "anthropic_routes"})
LLM_PATHS = ("chat/completions", "/completions", "embeddings", "/messages", "/responses")
NAMES_SHOWN = 10
COUNTS = ("rpm_limit", "tpm_limit", "max_parallel_requests")
"""LiteLLM's limit columns, in the order of laneway's ``rpm``, ``tpm``, ``max_concurrency``."""


@dataclass(frozen=True, slots=True)
class CarriedLimits:
    """A key's or team's limits as laneway counts them (``None``: no such limit)."""

    lanes: tuple[str, ...] = EVERY
    rpm: int | None = None
    tpm: int | None = None
    max_concurrency: int | None = None
    budget: float | None = None
    period: str | None = None


@dataclass(frozen=True, slots=True)
class CarriedTeam:
    name: str
    limits: CarriedLimits
    blocked: bool
    spend: float
    metadata: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class CarriedKey:
    """A key to store: no secret; ``sha256`` is LiteLLM's digest, ``prefix`` its display form."""

    name: str
    sha256: str
    prefix: str
    team: str | None
    limits: CarriedLimits
    expires_at: float | None
    blocked: bool
    spend: float
    metadata: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class LiteLLMRows:
    """The tables read: keys and teams (required), users and organisations (metadata)."""

    keys: Sequence[Row]
    teams: Sequence[Row]
    users: Sequence[Row] = ()
    organizations: Sequence[Row] = ()


@dataclass(slots=True)
class KeysTranslation:
    """The keys and teams to store, what was not carried, what was carried differently."""

    keys: list[CarriedKey] = field(default_factory=list)
    teams: list[CarriedTeam] = field(default_factory=list)
    gaps: dict[str, list[str]] = field(default_factory=dict)
    """Not carried: a line (what, and why) to the keys or teams it concerns."""
    changes: dict[str, list[str]] = field(default_factory=dict)
    """Carried with a change of meaning: a line to the keys or teams it concerns."""

    def gap(self, line: str, who: str) -> None:
        self.gaps.setdefault(line, []).append(who)

    def change(self, line: str, who: str) -> None:
        self.changes.setdefault(line, []).append(who)

    @staticmethod
    def lines(found: Mapping[str, list[str]]) -> list[str]:
        """Each line with the names it concerns (the first ``NAMES_SHOWN``, then a count)."""
        out = []
        for line, names in found.items():
            shown = ", ".join(names[:NAMES_SHOWN])
            more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
            out.append(f"{line}: {shown}{more}")
        return out


def translate_keys(
    rows: LiteLLMRows,
    known: Catalog,
    periods: Collection[str],
    now: float,
    settings: Mapping[str, object] | None = None,
) -> KeysTranslation:
    """The laneway keys and teams of ``rows``; ``periods`` are the budget periods laneway
    counts, ``now`` the wall time of the import (for spend of periods already ended),
    ``settings`` the config's ``litellm_settings`` (where budgets reset)."""
    run = _Translator(known, periods, now, rows)
    for row in sorted(rows.teams, key=lambda r: _order(r, "team_id")):
        run.team(row)
    for row in sorted(rows.keys, key=lambda r: _order(r, "key_alias")):
        run.key(row)
    for user in rows.users:
        _user_limits(user, run.out)
    for org in rows.organizations:
        if key_columns.is_set(org.get("models")):
            run.out.gap(key_columns.ORG_LIMITS, f"organization {_text(org, 'organization_alias')}")
    moved = key_budgets.reset_change(settings or {})
    if moved is not None:
        calendar = {"day", "week", "month"}
        owners = [f"team {t.name}" for t in run.out.teams if t.limits.period in calendar]
        owners += [f"key {k.name}" for k in run.out.keys if k.limits.period in calendar]
        for owner in owners:
            run.out.change(moved, owner)
    return run.out


def _order(row: Row, column: str) -> tuple[float, str]:
    """Oldest first (a name taken twice keeps it for the older row), then by name."""
    return _time(row.get("created_at")) or 0.0, _text(row, column)


class _Translator:
    """One translation's context: what it reads from, and the teams and names made so far."""

    def __init__(
        self, known: Catalog, periods: Collection[str], now: float, rows: LiteLLMRows
    ) -> None:
        self.known = known
        self.periods = periods
        self.now = now
        self.users = {str(u.get("user_id")): u for u in rows.users}
        self.orgs = {str(o.get("organization_id")): o for o in rows.organizations}
        self.teams: dict[str, tuple[CarriedTeam, Reach]] = {}
        self.names: set[str] = set()
        self.out = KeysTranslation()

    def team(self, row: Row) -> None:
        team_id = _text(row, "team_id")
        alias = _text(row, "team_alias")
        taken = {team.name for team, _ in self.teams.values()}
        name = alias if alias and alias not in taken else team_id
        label = f"team {name}"
        reached = reach(_names(row.get("models")), self.known)
        for unmapped in reached.unmapped:
            self.out.gap(f"team model {unmapped}", label)
        limits, blocked = self.limits(row, reached.lanes, label)
        if any(v is not None for v in (limits.rpm, limits.tpm, limits.max_concurrency)):
            self.out.change(key_columns.TEAM_COUNTS, label)
        spent = self.spend(row, label)
        self.unread(row, key_columns.READ_TEAM, label)
        origin: dict[str, object] = {"team_id": team_id, "team_alias": alias or None}
        origin |= _org(row, self.orgs)
        origin["members"] = sorted({*_names(row.get("admins")), *_names(row.get("members"))})
        kept, _ = key_columns.split_metadata(row.get("metadata"))
        team = CarriedTeam(
            name,
            limits,
            blocked or bool(row.get("blocked")),
            spent,
            {**kept, "litellm": {k: v for k, v in origin.items() if v is not None}},
        )
        self.teams[team_id] = (team, reached)
        self.out.teams.append(team)

    def key(self, row: Row) -> None:
        digest = _text(row, "token")
        display = _text(row, "key_name")
        prefix = display if DISPLAY.match(display) else "sk-..."
        name = _unique(_text(row, "key_alias") or prefix, self.names)
        label = f"key {name}"
        if not DIGEST.match(digest):
            self.out.gap(
                "token: not a sha256 digest, so no caller's sk- key can match it; not imported",
                label,
            )
            return
        if not _calls_models(row.get("allowed_routes")):
            self.out.gap(key_columns.MANAGEMENT_KEY, label)
            return
        if key_columns.is_set(row.get("allowed_routes")):
            self.out.change("allowed_routes: a laneway key may call every API of its lanes", label)
        team_id = _text(row, "team_id")
        found = self.teams.get(team_id) if team_id else None
        reached = reach(_names(row.get("models")), self.known, None if found is None else found[1])
        for unmapped in reached.unmapped:
            self.out.gap(f"model {unmapped}", label)
        if not reached.lanes:
            self.out.gap(key_columns.NO_LANE, label)
        limits, blocked = self.limits(row, reached.lanes, label)
        if team_id and found is None:
            self.out.gap("team_id names no team in LiteLLM_TeamTable; imported blocked", label)
            blocked = True
        self.unread(row, key_columns.READ_KEY, label)
        if _text(row, "project_id"):
            self.out.gap(key_columns.PROJECT_LIMITS, label)
        kept, _ = key_columns.split_metadata(row.get("metadata"))
        self.names.add(name)
        self.out.keys.append(
            CarriedKey(
                name=name,
                sha256=digest,
                prefix=prefix,
                team=None if found is None else found[0].name,
                limits=limits if found is None else _within(limits, found[0].limits),
                expires_at=_time(row.get("expires")),
                blocked=blocked or bool(row.get("blocked")),
                spend=self.spend(row, label),
                metadata={**kept, "litellm": _key_origin(row, self.users, self.orgs)},
            )
        )

    def limits(self, row: Row, lanes: tuple[str, ...], label: str) -> tuple[CarriedLimits, bool]:
        """rpm, tpm, max_parallel_requests and the budget of a key or team row, and whether a
        limit of 0 (or a budget of 0 or less) refuses every call, as it does in LiteLLM."""
        amount, duration = _number(row.get("max_budget")), row.get("budget_duration")
        counted = (_number(row.get(column)) for column in (*COUNTS, "max_budget"))
        blocked = any(number is not None and number <= 0 for number in counted)
        if blocked:
            self.out.gap(key_columns.ZERO_LIMIT, label)
        carried: key_budgets.Budget | str | None = None
        if amount is not None and amount > 0:
            carried = key_budgets.budget(amount, str(duration) if duration else None, self.periods)
        if isinstance(carried, str):
            self.out.gap(f"max_budget: {carried}", label)
            carried = None
        elif carried is not None and carried.change:
            self.out.change(f"budget: {carried.change}", label)
        rpm, tpm, concurrency = (_positive(row.get(column)) for column in COUNTS)
        limits = CarriedLimits(
            lanes,
            rpm,
            tpm,
            concurrency,
            None if carried is None else carried.amount,
            None if carried is None else carried.period,
        )
        return limits, blocked

    def spend(self, row: Row, label: str) -> float:
        spent = _number(row.get("spend")) or 0.0
        carried, why = key_budgets.spend(spent, _time(row.get("budget_reset_at")), self.now)
        if why is not None:
            self.out.change(why, label)
        return carried

    def unread(self, row: Row, read: frozenset[str], label: str) -> None:
        """Report each column set and not carried, and metadata LiteLLM acts on."""
        for column, why in key_columns.unread(row, read):
            self.out.gap(f"{column}: {why}", label)
        _, managed = key_columns.split_metadata(row.get("metadata"))
        if managed:
            self.out.gap(f"metadata {', '.join(managed)}: {key_columns.METADATA_REASON}", label)


def _within(own: CarriedLimits, team: CarriedLimits) -> CarriedLimits:
    """A key's limits within its team's: LiteLLM refuses a call over either, so each limit is
    the smaller of the two (the team's where the key sets none), as laneway's teams bound."""
    values = {}
    for name in ("rpm", "tpm", "max_concurrency"):
        mine, cap = getattr(own, name), getattr(team, name)
        values[name] = cap if mine is None else mine if cap is None else min(mine, cap)
    budget = own.budget
    if budget is not None and team.budget is not None and own.period == team.period:
        budget = min(budget, team.budget)
    return CarriedLimits(
        own.lanes, values["rpm"], values["tpm"], values["max_concurrency"], budget, own.period
    )


def _key_origin(row: Row, users: Mapping[str, Row], orgs: Mapping[str, Row]) -> dict[str, object]:
    """Where the key came from, for its metadata: its owner, team, organisation, dates."""
    origin: dict[str, object] = {"key_alias": _text(row, "key_alias") or None}
    user = users.get(_text(row, "user_id"))
    origin["user_id"] = _text(row, "user_id") or None
    if user is not None:
        for column in ("user_email", "user_alias", "user_role"):
            origin[column] = _text(user, column) or None
    origin["team_id"] = _text(row, "team_id") or None
    origin["project_id"] = _text(row, "project_id") or None
    origin |= _org(row, orgs)
    for column in ("created_at", "last_active"):
        at = _time(row.get(column))
        origin[column] = None if at is None else datetime.fromtimestamp(at, UTC).isoformat()
    origin["created_by"] = _text(row, "created_by") or None
    origin["total_spend"] = _number(row.get("total_spend"))
    return {k: v for k, v in origin.items() if v is not None}


def _org(row: Row, orgs: Mapping[str, Row]) -> dict[str, object]:
    org_id = _text(row, "organization_id")
    if not org_id:
        return {}
    alias = _text(orgs.get(org_id, {}), "organization_alias")
    return {"organization_id": org_id, **({"organization_alias": alias} if alias else {})}


def _user_limits(user: Row, out: KeysTranslation) -> None:
    limits = ("max_budget", "rpm_limit", "tpm_limit", "max_parallel_requests")
    if any(key_columns.is_set(user.get(c)) for c in limits) or key_columns.is_set(
        user.get("models")
    ):
        out.gap(
            "user budgets, limits and models: LiteLLM bounds all of a user's keys together; "
            "laneway has no users (put their keys in a team); the user is in each key's metadata",
            f"user {_text(user, 'user_id')}",
        )


def _calls_models(routes: object) -> bool:
    """Whether a key with LiteLLM ``allowed_routes`` ``routes`` may call a model."""
    if not key_columns.is_set(routes) or not isinstance(routes, list):
        return True
    return any(
        str(r) in LLM_ROUTES or any(p in str(r) for p in LLM_PATHS) or "*" in str(r) for r in routes
    )


def _unique(name: str, taken: set[str]) -> str:
    found, n = name, 2
    while found in taken:
        found, n = f"{name} #{n}", n + 1
    return found


def _names(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _text(row: Row, column: str) -> str:
    value = row.get(column)
    return value.strip() if isinstance(value, str) else ""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _positive(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number > 0 else None


def _time(value: object) -> float | None:
    return _number(value)
