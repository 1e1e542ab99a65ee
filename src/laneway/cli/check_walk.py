"""The sources a failing call walks, as ``laneway check`` prints them, and those never reached.

The walk is the engine's own rule (``laneway.policy.selection.failing_walk``)
run over the lane's declared sources, with their breakers, so what check says
is what a call does. A 429 does not count for a breaker, so where a breaker
can open within one call a lane retrying 429 beside other statuses gets a
walk of its own on a 429. Backoff jitter draws each wait below its longest:
a shorter wait may fit where the longest does not, so where the walks at the
shortest and the longest waits differ, check prints both (the jitter bounds).
"""

from __future__ import annotations

from collections.abc import Sequence

from laneway.app.policies import breaker_limits, quota_limits
from laneway.config.models import LaneConfig
from laneway.core.failures import SET_ASIDE
from laneway.policy.health import HealthPolicy
from laneway.policy.retry import RetryPolicy
from laneway.policy.selection import SourceSpec, WalkTime, failing_walk

__all__ = ["failing_walks", "unreached_warnings", "walk_notes"]

THROTTLED = "429"
"""The status that does not count for a breaker (``laneway.policy.outcome``)."""


def failing_walks(
    lane: LaneConfig, policy: RetryPolicy, backoffs: Sequence[float] | None = None
) -> list[tuple[str, list[str]]]:
    """The sources a call walks when every attempt fails, per kind of failure.

    Error statuses go back to the preferred source until it failed twice;
    timeouts and refused connections set the source aside at once; a
    source's breaker opens on the failures it counts. Failures are taken to
    come at once, and the wait before retry ``n`` to be ``backoffs[n - 1]``
    (each backoff at its longest unless given): one that cannot fit before
    the deadline moves the call to the next source.
    """
    if backoffs is None:
        backoffs = [policy.backoff.ceiling(n) for n in range(1, policy.most_retries() + 1)]
    time = WalkTime(backoffs, lane.deadline, lane.min_attempt)
    statuses = [label for label in policy.retry_on if label.isdigit()]
    opening = [label for label in statuses if label != THROTTLED]
    aside = [label for label in policy.retry_on if label in SET_ASIDE]
    walks: list[tuple[str, list[str]]] = []
    for kind, labels, counted, set_aside in (
        ("an error status", statuses or ["-"], bool(opening), False),
        ("a 429", [THROTTLED] if opening and THROTTLED in statuses else [], False, False),
        ("a timeout or refused connection", aside, True, True),
    ):
        if not labels:
            continue
        attempts = 1 + max(policy.retries_allowed(label) for label in labels)
        specs = _specs(lane, counted)
        walk = failing_walk(specs, attempts, HealthPolicy(), set_aside=set_aside, time=time)
        if kind != "a 429" or walk != walks[0][1]:
            walks.append((kind, walk))
    return walks


def walk_notes(name: str, lane: LaneConfig, policy: RetryPolicy) -> list[str]:
    """``walk LANE: on KIND: ...`` per walk, and the jitter's bounds where they differ."""
    walks = failing_walks(lane, policy)
    notes = [f"walk {name}: on {kind}: {', '.join(walk)}" for kind, walk in walks]
    floors = [policy.backoff.floor(n) for n in range(1, policy.most_retries() + 1)]
    at_floors = dict(failing_walks(lane, policy, floors))
    for kind, longest in walks:
        shortest = at_floors.get(kind, at_floors["an error status"])
        if shortest != longest:
            notes.append(
                f"walk {name}: on {kind}, with jitter: {', '.join(longest)} at the longest "
                f"backoffs, {', '.join(shortest)} at the shortest (a call walks one of these "
                "or a mix, as its draws fit the deadline)"
            )
    return notes


def _specs(lane: LaneConfig, counted: bool) -> list[SourceSpec]:
    """The lane's sources in priority order, their ``rpm``, and breakers where failures count."""
    ranked = sorted(
        zip(lane.source_names(), lane.sources, strict=True), key=lambda p: p[1].priority
    )
    specs = []
    for name, source in ranked:
        breaker = breaker_limits(source.breaker or lane.breaker) if counted else None
        quota = quota_limits(source)
        rpm, held = (quota.rpm, quota.held_for) if quota is not None else (None, 0.0)
        specs.append(SourceSpec(name, source.priority, source.weight, breaker, rpm, held))
    return specs


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
