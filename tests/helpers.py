"""Helpers for building lanes that point at the simulator."""

from __future__ import annotations

import itertools
from typing import Any, Protocol

from laneway.config.models import LanewayConfig

_ids = itertools.count()


class Upstream(Protocol):
    """A simulator to point lanes at: loopback ``RunningSim`` or in-process ``VirtualSim``."""

    @property
    def base_url(self) -> str:
        """Where the simulator answers."""
        ...


def unique_spec(spec: str) -> str:
    """``spec`` with a fresh ``id`` token, so counters and hits are this test's own."""
    tag = f"id=t{next(_ids)}"
    return f"{spec},{tag}" if spec else tag


def sim_url(sim: Upstream, spec: str) -> str:
    """The base URL of a simulated upstream with behaviour ``spec``."""
    return f"{sim.base_url}/b/{spec}/v1"


def one_lane(sim: Upstream, spec: str, name: str = "lane", **lane: Any) -> LanewayConfig:
    """A config with one lane of one source at ``sim`` behaving as ``spec``."""
    source = {"provider": "openai", "base_url": sim_url(sim, spec), "model": "sim-model"}
    body: dict[str, Any] = {"sources": [source], **lane}
    return LanewayConfig.model_validate({"lanes": {name: body}})
