"""Liveness and readiness: which lanes can run, and for those that cannot, why.

Readiness is fixed when the engine is built (a key variable is set or it is
not), so both answers are rendered once, at start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import orjson

from laneway.engine.lane import Lane


@dataclass(frozen=True, slots=True)
class LaneState:
    """One lane's readiness; ``problems`` covers every source that cannot run."""

    name: str
    kind: str
    ready: bool
    problems: tuple[str, ...]


def lane_states(lanes: Mapping[str, Lane]) -> list[LaneState]:
    """Each lane's state, in config order. A lane is ready when one source is."""
    return [
        LaneState(
            name,
            lane.kind,
            not lane.problems,
            tuple(problem for source in lane.sources for problem in source.problems),
        )
        for name, lane in lanes.items()
    ]


def readiness_body(
    states: list[LaneState], key_problems: list[str], need: Literal["all", "any"] = "all"
) -> tuple[int, bytes]:
    """``GET /readyz``: 200 when every lane is ready (``any``: one is), else 503; the body says why.

    The body lists every lane and why it is not ready either way, so a
    deployment that accepts some lanes down (``server.ready: any``) still sees them.
    """
    lanes = {
        state.name: {"ready": state.ready, "kind": state.kind, "problems": list(state.problems)}
        for state in states
    }
    ready = (all if need == "all" else any)(state.ready for state in states)
    body = {"ready": ready, "need": need, "lanes": lanes, "key_problems": key_problems}
    return (200 if ready else 503), orjson.dumps(body)
