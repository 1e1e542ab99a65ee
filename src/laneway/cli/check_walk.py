"""The sources a failing call walks, as ``laneway check`` prints them, and those never reached.

The walk is the engine's own rule (``laneway.policy.selection.failing_walk``)
run over the lane's declared sources, so what check says is what a call does.
"""

from __future__ import annotations

from laneway.config.models import LaneConfig
from laneway.core.failures import SET_ASIDE
from laneway.policy.health import HealthPolicy
from laneway.policy.retry import RetryPolicy
from laneway.policy.selection import SourceSpec, WalkTime, failing_walk

__all__ = ["failing_walks", "unreached_warnings"]


def failing_walks(lane: LaneConfig, policy: RetryPolicy) -> list[tuple[str, list[str]]]:
    """The sources a call walks when every attempt fails, per kind of failure.

    Error statuses go back to the preferred source until it failed twice;
    timeouts and refused connections set the source aside at once. Failures
    are taken to come at once and each backoff at its longest: one that
    cannot fit before the deadline moves the call to the next source.
    """
    ranked = sorted(
        zip(lane.source_names(), lane.sources, strict=True), key=lambda p: p[1].priority
    )
    specs = [SourceSpec(name, s.priority, s.weight) for name, s in ranked]
    statuses = [label for label in policy.retry_on if label.isdigit()]
    aside = [label for label in policy.retry_on if label in SET_ASIDE]
    backoffs = [policy.backoff.ceiling(n) for n in range(1, policy.most_retries() + 1)]
    time = WalkTime(backoffs, lane.deadline, lane.min_attempt)
    walks: list[tuple[str, list[str]]] = []
    for kind, labels, set_aside in (
        ("an error status", statuses or ["-"], False),
        ("a timeout or refused connection", aside, True),
    ):
        if not labels:
            continue
        attempts = 1 + max(policy.retries_allowed(label) for label in labels)
        walk = failing_walk(specs, attempts, HealthPolicy(), set_aside=set_aside, time=time)
        walks.append((kind, walk))
    return walks


def unreached_warnings(
    name: str, lane: LaneConfig, walks: list[tuple[str, list[str]]]
) -> list[str]:
    """One warning per fallback source the failing walk on an error status never reaches.

    Sources of the first priority share calls by weight, so only a later
    priority is warned about. Such a source still serves a call whose earlier
    sources are not admitted (breaker open, quota spent), and, when the
    timeout walk reaches it, one whose earlier source timed out or refused
    the connection.
    """
    by_kind = dict(walks)
    status_walk = by_kind.get("an error status", [])
    timeout_walk = by_kind.get("a timeout or refused connection", [])
    first = min(source.priority for source in lane.sources)
    why = "a source yields only after two failures" if len(status_walk) > 1 else "no retry"
    out = []
    for source, spec in zip(lane.source_names(), lane.sources, strict=True):
        if source in status_walk or spec.priority == first:
            continue
        reached = "is not admitted"
        if source in timeout_walk:
            reached = "is not admitted, times out or its connection fails"
        out.append(
            f"{name}: source {source} is never tried after an error status (that walk is "
            f"{', '.join(status_walk)}: {why}): it is reached only when an earlier source "
            f"{reached}"
        )
    return out
