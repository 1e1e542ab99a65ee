"""A lane ready to run: its sources bound to adapters, its policy built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from laneway.config.models import LaneConfig, SourceConfig
from laneway.policy.backoff import Backoff
from laneway.policy.retry import RetryPolicy
from laneway.providers.base import Provider
from laneway.providers.registry import make_provider


@dataclass(slots=True)
class Source:
    """One upstream of a lane, with its adapter and what keeps it from running."""

    name: str
    config: SourceConfig
    provider: Provider
    problems: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """True when nothing keeps the source from being called."""
        return not self.problems


@dataclass(slots=True)
class Lane:
    """A named route: sources in priority order and the enforced policy."""

    name: str
    config: LaneConfig
    sources: list[Source]
    policy: RetryPolicy

    @property
    def problems(self) -> list[str]:
        """Why the lane cannot run (empty when at least one source is ready)."""
        if any(source.ready for source in self.sources):
            return []
        return [p for source in self.sources for p in source.problems]

    @property
    def kind(self) -> str:
        """``chat`` or ``embed``."""
        return self.config.kind


def build_lane(name: str, config: LaneConfig, environ: Mapping[str, str]) -> Lane:
    """Bind a lane's sources to adapters and its settings to a ``RetryPolicy``."""
    names = config.source_names()
    ordered = sorted(zip(names, config.sources, strict=True), key=lambda pair: pair[1].priority)
    sources = [_build_source(n, s, environ) for n, s in ordered]
    return Lane(name, config, sources, retry_policy(config))


def retry_policy(config: LaneConfig) -> RetryPolicy:
    """The lane's retry semantics as a pure policy object."""
    b = config.backoff
    return RetryPolicy(
        retries=config.retries,
        retry_on=frozenset(str(code) for code in config.retry_on),
        backoff=Backoff(kind=b.kind, base=b.base, cap=b.cap, jitter=b.jitter),
        min_attempt=config.min_attempt,
        max_pushback_wait=config.max_pushback_wait,
        max_pushbacks=config.max_pushbacks,
    )


def _build_source(name: str, config: SourceConfig, environ: Mapping[str, str]) -> Source:
    problems: list[str] = []
    key: str | None = None
    if config.api_key is not None:
        key = config.api_key.resolve(environ)
        if key is None:
            problems.append(f"source {name}: environment variable {config.api_key.env} is unset")
    provider = make_provider(config.provider, config.base_url, config.model, key)
    return Source(name, config, provider, problems)
