"""``translate``: a parsed LiteLLM proxy config in, a ``Translation`` out.

Pure: the laneway config as plain data, a header with what every lane shares
and what the proxy-wide settings became, a note per lane where it differs, and
every key with no laneway equivalent (listed, never dropped).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laneway.migrate.litellm import fallbacks, lanes, settings
from laneway.migrate.litellm.deployments import MODES, deployment, dimensions_of, mode_of
from laneway.migrate.litellm.shared import Translation, as_int, as_number, mapping

USAGE_NOTE = (
    "usage and cost: LiteLLM fills usage an upstream omits with zeros and prices a model "
    "missing from its cost map at $0; laneway reports both as unknown (n/a), never 0"
)
BACKOFF_NOTE = (
    "backoff: LiteLLM sleeps 0.5s x 2^n (at least router_settings.retry_after) capped at 8s "
    "plus up to 0.75s of jitter, or the upstream's Retry-After up to 60s; laneway sleeps the "
    "same exponential without the jitter, and a Retry-After up to max_pushback_wait 60s"
)


def translate(data: Mapping[str, Any]) -> Translation:
    """The laneway equivalent of LiteLLM proxy config ``data``."""
    out = Translation({})
    router = mapping(data, "router_settings", out)
    lite = mapping(data, "litellm_settings", out)
    general = mapping(data, "general_settings", out)
    out.seen.update(_dotted(data))
    shared = lanes.settings(router, lite)
    out.gaps.extend(lanes.rejection_gaps(shared.retry_policy))
    deployments: dict[str, Any] = {}
    built: dict[str, Any] = {}
    for group, entries in _groups(data.get("model_list"), out).items():
        kept = []
        for name, entry in zip(_names(group, entries), entries, strict=True):
            carried = deployment(name, entry, out)
            if carried is not None:
                deployments[name] = carried
                kept.append((name, entry))
        lane = _lane(group, kept, shared, out) if kept else None
        if lane is None:
            out.gaps.append(f"model_list: {group}: no deployment laneway can call; lane left out")
        else:
            built[group] = lane
    fallbacks.fallbacks(router, lite, built, deployments, out)
    out.config = {"deployments": deployments, "lanes": built}
    _aliases(router, built, out)
    settings.router_rest(router, out)
    settings.general(general, out)
    settings.litellm_rest(lite, out)
    settings.top_rest(data, out)
    settings.cache(lite, built, out)
    if out.literal_keys:
        out.header.append(
            f"api_key is a literal in the file for {', '.join(out.literal_keys)}; "
            "prefer os.environ/NAME"
        )
    _share_notes(out)
    return out


def _dotted(data: Mapping[str, Any]) -> set[str]:
    keys = {str(k) for k in data}
    for section in ("router_settings", "litellm_settings", "general_settings"):
        found = data.get(section)
        if isinstance(found, Mapping):
            keys.update(f"{section}.{k}" for k in found)
    return keys


def _groups(model_list: object, out: Translation) -> dict[str, list[Mapping[str, Any]]]:
    """model_list entries by ``model_name``: a LiteLLM model group is a laneway lane."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    if not isinstance(model_list, list):
        out.gaps.append("model_list: missing or not a list; no lane to write")
        return groups
    for index, entry in enumerate(model_list):
        name = entry.get("model_name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not isinstance(entry.get("litellm_params"), Mapping):
            out.gaps.append(f"model_list[{index}]: needs model_name and litellm_params; skipped")
            continue
        groups.setdefault(name, []).append(entry)
    return groups


def _names(group: str, entries: list[Mapping[str, Any]]) -> list[str]:
    """Deployment names: ``model_info.id`` where set (LiteLLM's stable id), else the group's."""
    ids = [_id(entry) for entry in entries]
    if all(ids) and len(set(ids)) == len(ids):
        return [str(i) for i in ids]
    if len(entries) == 1:
        return [group]
    return [f"{group}-{index + 1}" for index in range(len(entries))]


def _id(entry: Mapping[str, Any]) -> str | None:
    info = entry.get("model_info")
    found = info.get("id") if isinstance(info, Mapping) else None
    return str(found) if isinstance(found, str | int) and not isinstance(found, bool) else None


def _lane(
    group: str, kept: list[tuple[str, Mapping[str, Any]]], shared: Any, out: Translation
) -> dict[str, Any] | None:
    modes = {
        mode_of(str(e["litellm_params"].get("model", "")), e.get("model_info") or {})
        for _, e in kept
    }
    kinds = {MODES.get(mode) for mode in modes}
    if len(kinds) != 1 or None in kinds:
        unknown = sorted(m for m in modes if m not in MODES) or sorted(modes)
        out.gaps.append(
            f"model_list: {group}: mode {', '.join(unknown)}: laneway lanes are chat and embed "
            "(no rerank, image, audio or moderation lanes); lane left out"
        )
        return None
    kind = str(kinds.pop())
    notes = out.notes.setdefault(group, [])
    params = [entry["litellm_params"] for _, entry in kept]
    lane = lanes.lane(kind, params, shared, notes)
    if kind == "embed":
        _dimensions(group, kept, lane, notes)
    lane["sources"] = [_source(name, entry) for name, entry in kept]
    if "retries" in lane:
        notes.append(BACKOFF_NOTE)
    notes.append(USAGE_NOTE)
    return lane


def _dimensions(
    group: str, kept: list[tuple[str, Mapping[str, Any]]], lane: dict[str, Any], notes: list[str]
) -> None:
    found = {
        dimensions_of(str(e["litellm_params"].get("model", "")), e.get("model_info") or {})
        for _, e in kept
    }
    if len(found) == 1 and None not in found:
        lane["dimensions"] = found.pop()
    else:
        notes.append(
            f"dimensions: not declared for {group}: its models' vector length is unknown here "
            "or differs, or they take no dimensions parameter; set it if callers rely on one"
        )


def _source(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    params = entry["litellm_params"]
    source: dict[str, Any] = {"deployment": name}
    if as_int(params.get("order")) is not None:
        source["priority"] = params["order"]
    weight = as_number(params.get("weight"))
    if weight is not None and weight > 0:
        source["weight"] = weight
    return source


def _aliases(router: Mapping[str, Any], built: Mapping[str, Any], out: Translation) -> None:
    aliases = router.get("model_group_alias")
    if not isinstance(aliases, Mapping):
        return
    found: dict[str, str] = {}
    for alias, target in aliases.items():
        group = target.get("model") if isinstance(target, Mapping) else target
        if isinstance(group, str) and group in built and alias not in built:
            found[str(alias)] = group
        else:
            out.gaps.append(f"router_settings.model_group_alias.{alias}: no lane {group!r}")
    if found:
        out.config["aliases"] = found


def _share_notes(out: Translation) -> None:
    """A note several lanes have goes to the header once, naming them (``every lane`` when all
    do); each lane keeps only the notes it alone has."""
    names = list(out.config["lanes"])
    holders: dict[str, list[str]] = {}
    for name in names:
        for note in out.notes[name]:
            holders.setdefault(note, []).append(name)
    shared = {note: lanes for note, lanes in holders.items() if len(lanes) > 1 or len(names) == 1}
    header = [
        f"{'every lane' if len(lanes) == len(names) else 'lanes ' + ', '.join(lanes)}: {note}"
        for note, lanes in shared.items()
    ]
    out.header[:0] = sorted(header, key=lambda line: not line.startswith("every lane"))
    for name in names:
        out.notes[name] = [n for n in out.notes[name] if n not in shared]
