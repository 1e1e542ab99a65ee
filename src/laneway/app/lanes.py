"""Lanes from a configuration: each source bound to its provider adapter.

Source binding lives in the composition root because it names concrete
adapters (``laneway.providers.registry``); the engine receives the lanes
built, with their settings and policy objects translated from the
configuration by ``app.policies``.
"""

from __future__ import annotations

from collections.abc import Mapping

from laneway.app.policies import (
    breaker_limits,
    hedging,
    lane_settings,
    pacer_limits,
    quota_limits,
    retry_policy,
    source_settings,
)
from laneway.config.models import LaneConfig, LanewayConfig, QuotaGroupConfig, SourceConfig
from laneway.engine.lane import Lane, LaneMemory, Source
from laneway.policy.stall import StallWatch
from laneway.providers.registry import make_provider


def build_lanes(config: LanewayConfig, environ: Mapping[str, str]) -> dict[str, Lane]:
    """Every lane of ``config``; those naming deployments share one memory of them."""
    memory = LaneMemory()
    return {
        name: build_lane(name, lane, environ, config.quota_groups, memory)
        for name, lane in config.lanes.items()
    }


def build_lane(
    name: str,
    config: LaneConfig,
    environ: Mapping[str, str],
    groups: Mapping[str, QuotaGroupConfig] | None = None,
    shared: LaneMemory | None = None,
) -> Lane:
    """Bind a lane's sources to adapters and its settings to a ``RetryPolicy``.

    ``groups`` are the config's quota groups; ``shared`` the memory of
    deployments, when other lanes name them too.
    """
    names = config.source_names()
    ordered = sorted(zip(names, config.sources, strict=True), key=lambda pair: pair[1].priority)
    scoped = any(source.deployment is not None for _, source in ordered)
    lane_key = name if scoped else None
    sources = [
        built for n, s in ordered for built in _build_sources(n, s, environ, lane_key, groups or {})
    ]
    lane = Lane(
        name,
        lane_settings(config),
        sources,
        retry_policy(config),
        breaker=breaker_limits(config.breaker),
        stall=StallWatch(config.stall_after),
        hedging=hedging(config),
    )
    if scoped and shared is not None:
        lane.memory = shared.sharing()
    return lane


def _build_sources(
    name: str,
    config: SourceConfig,
    environ: Mapping[str, str],
    lane: str | None,
    groups: Mapping[str, QuotaGroupConfig],
) -> list[Source]:
    """The source, or with ``each_key`` one source per key its variable holds.

    ``lane`` is set when the lane's scope is shared: inline sources' keys then
    carry it. The keys after the first are named ``<name>/key<n>``, each its
    own state (quota, breaker, health), unless a quota group holds them.
    """
    if config.deployment is not None:
        state = f"deployment:{config.deployment}"
    else:
        state = name if lane is None else f"lane:{lane}/{name}"
    secret = config.api_key
    if secret is None or not config.each_key or secret.env is None:
        api_key = None if secret is None else secret.resolve(environ)
        return [_build_source(name, state, config, api_key, groups)]
    keys: list[str | None] = [*pooled_keys(secret.env, environ)] or [None]
    return [
        _build_source(
            name if n == 1 else f"{name}/key{n}",
            state if n == 1 else f"{state}/key{n}",
            config,
            api_key,
            groups,
        )
        for n, api_key in enumerate(keys, start=1)
    ]


def pooled_keys(variable: str, environ: Mapping[str, str]) -> list[str]:
    """Every key a variable holds: ``NAME`` (a comma list allowed), then ``NAME_2``, ``NAME_3``...

    The numbered ones are read until the first that is unset.
    """
    found = [part.strip() for part in environ.get(variable, "").split(",") if part.strip()]
    number = 2
    while environ.get(f"{variable}_{number}"):
        found += [p.strip() for p in environ[f"{variable}_{number}"].split(",") if p.strip()]
        number += 1
    return found


def _build_source(
    name: str,
    state: str,
    config: SourceConfig,
    api_key: str | None,
    groups: Mapping[str, QuotaGroupConfig],
) -> Source:
    problems: list[str] = []
    if config.api_key is not None and api_key is None:
        problems.append(f"source {name}: environment variable {config.api_key.env} is unset")
    provider = make_provider(
        config.provider,
        config.base_url,
        config.model,
        api_key,
        max_tokens=config.max_tokens,
        api_version=config.api_version,
    )
    group = config.quota_group
    return Source(
        name,
        source_settings(config),
        provider,
        problems,
        quota_limits(config, groups),
        pacer_limits(config),
        key=state,
        quota_key=f"quota-group:{group}" if group is not None else state,
        breaker=None if config.breaker is None else breaker_limits(config.breaker),
    )
