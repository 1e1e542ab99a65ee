"""LiteLLM's fallbacks as laneway's: ``fallback_lanes``, and context-length moves.

``Router.__init__`` (``litellm/router.py``) takes ``fallbacks``,
``context_window_fallbacks`` and ``content_policy_fallbacks`` from
``router_settings`` first, then from ``litellm_settings`` (``fallbacks or
litellm.fallbacks``), and appends ``default_fallbacks`` as the ``"*"`` entry of
``fallbacks``: a fallback for every group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laneway.core.failures import REQUEST_REJECTION_STATUSES
from laneway.migrate.litellm.shared import Translation

REQUEST_REJECTIONS = ", ".join(map(str, sorted(REQUEST_REJECTION_STATUSES)))


def fallbacks(
    router: Mapping[str, Any],
    lite: Mapping[str, Any],
    lanes: dict[str, Any],
    deployments: Mapping[str, Any],
    out: Translation,
) -> None:
    """``fallbacks`` and ``default_fallbacks`` become ``fallback_lanes``; context-window
    fallbacks become larger-window sources of the lane itself."""
    for entry in _listed(router.get("fallbacks") or lite.get("fallbacks")):
        for group, targets in entry.items():
            for target in targets if isinstance(targets, list) else [targets]:
                _fall_back(str(group), str(target), lanes, out)
    defaults = router.get("default_fallbacks") or lite.get("default_fallbacks")
    for target in defaults if isinstance(defaults, list) else []:
        for group in lanes:
            if group != target and lanes[group]["kind"] == lanes.get(target, {}).get("kind"):
                _fall_back(group, str(target), lanes, out)
    for entry in _listed(
        router.get("context_window_fallbacks") or lite.get("context_window_fallbacks")
    ):
        for group, targets in entry.items():
            for target in targets if isinstance(targets, list) else [targets]:
                _context_move(str(group), str(target), lanes, deployments, out)
    if router.get("content_policy_fallbacks") or lite.get("content_policy_fallbacks"):
        out.gaps.append(
            "content_policy_fallbacks: laneway does not move a content-filter refusal (a 400) "
            "to another lane: it is the request's, returned to the caller; not carried"
        )


def _listed(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _fall_back(group: str, target: str, lanes: dict[str, Any], out: Translation) -> None:
    lane, rescue = lanes.get(group), lanes.get(target)
    if lane is None or rescue is None or lane["kind"] != rescue["kind"] or group == target:
        out.gaps.append(f"fallbacks: {group} -> {target}: no such pair of lanes of one kind")
        return
    chain = lane.setdefault("fallback_lanes", [])
    if target not in chain:
        chain.append(target)
        out.notes[group].append(
            f"fallbacks: LiteLLM moves to {target} on any error after this group's retries, "
            f"with a new timeout per attempt; laneway falls back to lane {target} within the "
            f"caller's one deadline, on any failure but the caller's own rejections "
            f"({REQUEST_REJECTIONS})"
        )


def _context_move(
    group: str,
    target: str,
    lanes: dict[str, Any],
    deployments: Mapping[str, Any],
    out: Translation,
) -> None:
    """``group``'s context-length refusal moves to ``target``'s deployments: laneway moves a
    context-length failure to a source of the same lane with a larger ``context_window``."""
    lane, rescue = lanes.get(group), lanes.get(target)
    if lane is None or rescue is None or lane["kind"] != rescue["kind"] or group == target:
        out.gaps.append(
            f"context_window_fallbacks: {group} -> {target}: no such pair of lanes of one kind"
        )
        return
    own = [deployments[s["deployment"]].get("context_window") for s in lane["sources"]]
    if any(window is None for window in own):
        out.gaps.append(
            f"context_window_fallbacks: {group} -> {target}: laneway moves a context-length "
            f"refusal only to a source with a larger declared context_window, and {group}'s "
            "deployments declare none (set model_info.max_input_tokens); not carried"
        )
        return
    smallest = min(w for w in own if w is not None)
    tier = max(s.get("priority", 0) for s in lane["sources"]) + 1
    names = {s["deployment"] for s in lane["sources"]}
    added = []
    for source in rescue["sources"]:
        window = deployments[source["deployment"]].get("context_window")
        if source["deployment"] in names or window is None or window <= smallest:
            continue
        lane["sources"].append({"deployment": source["deployment"], "priority": tier})
        added.append(source["deployment"])
    if not added:
        out.gaps.append(
            f"context_window_fallbacks: {group} -> {target}: {target} declares no larger "
            "context_window (model_info.max_input_tokens); not carried"
        )
        return
    onward = " -> ".join([group, target, *rescue.get("fallback_lanes", [])])
    out.notes[group].append(
        f"context_window_fallbacks: LiteLLM's chain {onward} (each hop after the last one's "
        f"retries); laneway adds {', '.join(added)} as last-priority sources of this lane, so "
        "a context-length refusal moves there at once, within the one deadline, and no "
        f"further; they also serve ordinary failover once {group}'s own sources are out"
    )
