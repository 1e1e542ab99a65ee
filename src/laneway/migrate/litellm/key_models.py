"""A LiteLLM key's or team's ``models`` as the laneway lanes it may call.

As LiteLLM reads them (``litellm/proxy/auth/auth_checks.py``, ``check_model_access_helper``,
``_resolve_key_models_for_auth_check``; litellm 1.110.2): an empty list, ``*`` or
``all-proxy-models`` is every model; ``all-team-models`` is the key's team's models (every
model for a key without a team); a name is a model group (a lane), an alias
(``model_group_alias``, laneway's ``aliases``) or an access group (``model_info.access_groups``:
every group carrying it); a name with ``*`` is a pattern over the names a caller sends
(``is_model_allowed_by_pattern``: ``*`` is ``.*`` in a regular expression), also matched as
``provider/name`` where the name has no provider (``openai/*`` covers ``gpt-4o``). A key of a
team may call what both allow (``can_key_call_model`` and ``can_team_access_model`` both run).
``no-default-models`` is no model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from laneway.migrate.litellm.deployments import provider_of

EVERY = ("*",)
"""Every lane, as laneway writes it (lanes added later included, as LiteLLM's empty list)."""
ALL_PROXY = "all-proxy-models"
ALL_TEAM = "all-team-models"
NO_DEFAULT = "no-default-models"


@dataclass(frozen=True, slots=True)
class Catalog:
    """The names a caller may send to the imported config, and the lanes they reach."""

    lanes: tuple[str, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Access group name to the lanes of the model groups carrying it."""
    left_out: frozenset[str] = frozenset()
    """Model groups of the LiteLLM config that import to no lane."""


def catalog(config: Mapping[str, Any], data: Mapping[str, Any]) -> Catalog:
    """The catalog of a translated ``config`` (its lanes and aliases) and its LiteLLM ``data``."""
    lanes = tuple(config.get("lanes", {}))
    groups: dict[str, list[str]] = {}
    named: set[str] = set()
    entries = data.get("model_list")
    for entry in entries if isinstance(entries, list) else []:
        name = entry.get("model_name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str):
            continue
        named.add(name)
        info = entry.get("model_info")
        found = info.get("access_groups") if isinstance(info, Mapping) else None
        for group in found if isinstance(found, list) else []:
            if name in lanes and name not in groups.setdefault(str(group), []):
                groups[str(group)].append(name)
    return Catalog(
        lanes,
        dict(config.get("aliases", {})),
        {group: tuple(names) for group, names in groups.items()},
        frozenset(named - set(lanes)),
    )


@dataclass(frozen=True, slots=True)
class Reach:
    """The lanes a list of model names reaches (``EVERY`` for all), and the names reaching none,
    each with why."""

    lanes: tuple[str, ...]
    unmapped: tuple[str, ...] = ()


def reach(models: Sequence[str] | None, known: Catalog, team: Reach | None = None) -> Reach:
    """What ``models`` (a key's, or a team's with ``team`` None) reaches; a key of a team
    reaches only what the team's ``team`` reach allows too."""
    names = list(models or [])
    if ALL_TEAM in names:
        own = team if team is not None else Reach(EVERY)
        names = [n for n in names if n != ALL_TEAM]
        mine = own if not names else _union(own, _named(names, known))
    elif not names or "*" in names or ALL_PROXY in names:
        mine = Reach(EVERY)
    else:
        mine = _named(names, known)
    if team is None or team.lanes == EVERY:
        return mine
    if mine.lanes == EVERY:
        return Reach(team.lanes, mine.unmapped)
    both = tuple(lane for lane in mine.lanes if lane in team.lanes)
    return Reach(both, mine.unmapped)


def _union(one: Reach, other: Reach) -> Reach:
    if EVERY in (one.lanes, other.lanes):
        return Reach(EVERY, other.unmapped)
    return Reach(tuple(dict.fromkeys((*one.lanes, *other.lanes))), other.unmapped)


def _named(names: Sequence[str], known: Catalog) -> Reach:
    """The lanes reached by each name; names reaching none are kept with their reason."""
    found: dict[str, None] = {}
    unmapped: list[str] = []
    for name in names:
        lanes = _lanes_of(name, known)
        if lanes:
            found.update(dict.fromkeys(lanes))
        elif name != NO_DEFAULT:
            unmapped.append(f"{name} ({_why(name, known)})")
    ordered = tuple(lane for lane in known.lanes if lane in found)
    return Reach(ordered, tuple(unmapped))


def _lanes_of(name: str, known: Catalog) -> tuple[str, ...]:
    if name in known.lanes:
        return (name,)
    if name in known.aliases:
        return (known.aliases[name],)
    if name in known.groups:
        return known.groups[name]
    if "*" not in name:
        return ()
    try:
        pattern = re.compile(f"^{name.replace('*', '.*')}$")
    except re.error:
        return ()
    sent = {lane: lane for lane in known.lanes} | dict(known.aliases)
    return tuple(
        dict.fromkeys(lane for said, lane in sent.items() if _matches(pattern, said)).keys()
    )


def _matches(pattern: re.Pattern[str], said: str) -> bool:
    if pattern.match(said):
        return True
    provider, model = provider_of(said)
    return "/" not in said and bool(provider) and bool(pattern.match(f"{provider}/{model}"))


def _why(name: str, known: Catalog) -> str:
    if name in known.left_out:
        return "its model group imports to no lane"
    if "*" in name:
        return "a pattern no lane or alias matches"
    return "no model group, alias or access group of the config"
