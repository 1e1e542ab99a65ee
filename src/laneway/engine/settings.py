"""What the engine reads of a lane and its sources: frozen settings, made by ``laneway.app``.

The configuration (``laneway.config``) is validated text; the engine runs on
these instead, translated once when the lanes are built (``app.lanes``), so
it imports no configuration model and a settings object carries only what a
call reads. Policies (retry, breaker, quota, pacing, hedge) are built beside
them as policy objects on the ``Lane`` and its ``Source``s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class ResponseCacheSettings:
    """A chat or OCR lane's response cache: how long an answer is kept, and which are kept."""

    ttl: float
    when: Literal["always", "temperature0"] = "always"


@dataclass(frozen=True, slots=True)
class LaneSettings:
    """A lane's settings as calls read them (see ``config.lanes`` for each). One flat shape for
    every kind: a field of another kind keeps its default, and no call of this kind reads it."""

    kind: Literal["chat", "embed", "ocr"]
    deadline: float
    per_attempt: float
    """The per-attempt bound: ``attempt_timeout``, or the whole deadline."""
    min_attempt: float = 0.25
    first_byte_timeout: float | None = None
    idle_timeout: float | None = None
    continue_on_cut: bool | Literal["restart"] = False
    estimate_missing_usage: bool = False
    fallback_lanes: tuple[str, ...] = ()
    cache: ResponseCacheSettings | None = None
    prompt: str | None = None
    dimensions: int | None = None
    embed_cache: bool = False
    max_batch_items: int = 64
    max_response_bytes: int = 32 * 1024 * 1024
    batch_concurrency: int = 4
    max_inputs: int = 2048
    max_input_bytes: int = 2 * 1024 * 1024
    max_answer_bytes: int = 64 * 1024 * 1024
    models: tuple[str, ...] = ()
    """``provider:model`` of each source the lane names, in the configuration's order."""


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """A source's settings as calls read them; ``upstream`` is a digest of every setting but how
    its lane weighs it (its secrets included, never shown), so a reload knows an unchanged
    upstream (``app.carry``)."""

    provider: str
    model: str
    priority: int = 0
    weight: float = 1.0
    deployment: str | None = None
    quota_group: str | None = None
    context_window: int | None = None
    accepts_prefill: bool = False
    upstream: str = ""


@dataclass(frozen=True, slots=True)
class Routes:
    """How a model name reaches a lane: aliases, and each lane's chain of fallback lanes."""

    aliases: Mapping[str, str] = field(default_factory=dict)
    chains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def lane_of(self, model: str) -> str:
        """The lane a ``model`` names: an alias's lane, else the name itself."""
        return self.aliases.get(model, model)

    def fallback_chain(self, name: str) -> list[str]:
        """The lanes a call on ``name`` walks, ``name`` first."""
        return list(self.chains.get(name, (name,)))
