"""Liveness and readiness: which lanes can run, and for those that cannot, why.

Readiness is fixed when the engine is built (a key variable is set or it is
not), so both answers are rendered once, at start (and again for each
reloaded config, whose generation and hash they name). A lane that is not
ready still serves when a lane of its ``fallback_lanes`` chain is ready: calls
go straight there (``laneway.engine.fallback``), so it counts toward readiness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import orjson

from laneway.engine.lane import Lane


@dataclass(frozen=True, slots=True)
class ConfigId:
    """Which config a gateway serves: its generation (1 at start, +1 per reload) and hash."""

    generation: int
    hash: str

    def as_dict(self) -> dict[str, int | str]:
        """The ``config`` member of ``/readyz`` answers."""
        return {"generation": self.generation, "hash": self.hash}


@dataclass(frozen=True, slots=True)
class LaneState:
    """One lane's readiness; ``problems`` covers every source that cannot run.

    ``serves_via`` is the lane that answers its calls now: itself when ready,
    else the first ready lane of its fallback chain, ``None`` when none is.
    """

    name: str
    kind: str
    ready: bool
    problems: tuple[str, ...]
    serves_via: str | None = None

    @property
    def servable(self) -> bool:
        """Whether a call to this lane can be answered, by it or by its fallback chain."""
        return self.serves_via is not None


def lane_states(
    lanes: Mapping[str, Lane], chain: Callable[[str], list[str]] | None = None
) -> list[LaneState]:
    """Each lane's state, in config order. A lane is ready when one source is.

    ``chain`` gives a lane's fallback chain (``LanewayConfig.fallback_chain``),
    which may serve a lane that is not ready.
    """
    states = []
    for name, lane in lanes.items():
        walk = chain(name) if chain is not None else [name]
        via = next((other for other in walk if not lanes[other].problems), None)
        problems = tuple(problem for source in lane.sources for problem in source.problems)
        states.append(LaneState(name, lane.kind, not lane.problems, problems, via))
    return states


def readiness_body(
    states: list[LaneState],
    key_problems: list[str],
    need: Literal["all", "any"] = "all",
    config: ConfigId | None = None,
) -> tuple[int, bytes]:
    """``GET /readyz``: 200 when every lane can serve (``any``: one can), else 503; the body
    says why.

    A lane that is not ready but whose fallback chain has a ready lane can
    serve: it counts as such, and the body names the lane serving it
    (``serves_via``). The body lists every lane and why it is not ready
    either way, so a deployment that accepts some lanes down
    (``server.ready: any``) still sees them. ``config`` (when served by
    ``laneway serve``) names the config in force.
    """
    lanes = {
        state.name: {
            "ready": state.ready,
            "kind": state.kind,
            "problems": list(state.problems),
            "serves_via": state.serves_via,
        }
        for state in states
    }
    ready = (all if need == "all" else any)(state.servable for state in states)
    body: dict[str, object] = {
        "ready": ready,
        "need": need,
        "lanes": lanes,
        "key_problems": key_problems,
    }
    if config is not None:
        body["config"] = config.as_dict()
    return (200 if ready else 503), orjson.dumps(body)
