"""The configuration translated, once, into what the engine runs on.

A lane's and a source's settings (``engine.settings``: frozen, only what a
call reads), the routes from a model name to a lane and down its fallbacks,
and the policy objects each lane and source carries (retry, breaker, quota,
pacing, hedge). ``app.lanes`` builds lanes with them; ``laneway check`` and
``laneway size`` read the same translations, so they judge what will run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace

import orjson

from laneway.config.models import (
    BreakerConfig,
    ChatCacheConfig,
    ChatLaneConfig,
    EmbedLaneConfig,
    LaneConfig,
    LanewayConfig,
    QuotaGroupConfig,
    SourceConfig,
    UpstreamConfig,
)
from laneway.engine.lane import Hedging
from laneway.engine.settings import LaneSettings, ResponseCacheSettings, Routes, SourceSettings
from laneway.policy.backoff import Backoff
from laneway.policy.breaker import BreakerLimits
from laneway.policy.hedge import PERCENTILES, HedgeBudget, HedgeLimits
from laneway.policy.pacer import PacerLimits
from laneway.policy.quota import QuotaLimits
from laneway.policy.retry import RetryPolicy

LANE_VIEW = frozenset({"priority", "weight", "name"})
"""What a lane sets about a source without making it another upstream."""


def lane_settings(config: LaneConfig) -> LaneSettings:
    """What the engine reads of a lane (``engine.settings.LaneSettings``): what every lane
    has, then its kind's own fields; another kind's stay at their defaults, never read."""
    common = LaneSettings(
        kind=config.kind,
        deadline=config.deadline,
        per_attempt=config.per_attempt,
        min_attempt=config.min_attempt,
        estimate_missing_usage=config.estimate_missing_usage,
        models=tuple(f"{s.provider}:{s.model}" for s in config.sources),
    )
    if isinstance(config, ChatLaneConfig):
        return replace(
            common,
            first_byte_timeout=config.first_byte_timeout,
            idle_timeout=config.idle_timeout,
            continue_on_cut=config.continue_on_cut,
            fallback_lanes=tuple(config.fallback_lanes),
            cache=_response_cache(config.cache),
        )
    if isinstance(config, EmbedLaneConfig):
        return replace(
            common,
            fallback_lanes=tuple(config.fallback_lanes),
            dimensions=config.dimensions,
            embed_cache=config.embed_cache,
            max_batch_items=config.max_batch_items,
            max_response_bytes=config.max_response_bytes,
            batch_concurrency=config.batch_concurrency,
            max_inputs=config.max_inputs,
            max_input_bytes=config.max_input_bytes,
            max_answer_bytes=config.max_answer_bytes,
        )
    return replace(common, prompt=config.prompt, cache=_response_cache(config.cache))


def _response_cache(cache: ChatCacheConfig | None) -> ResponseCacheSettings | None:
    return None if cache is None else ResponseCacheSettings(cache.ttl, cache.when)


def source_settings(config: SourceConfig) -> SourceSettings:
    """What the engine reads of a source; ``upstream`` names every setting but the lane's
    view of it, so a reload knows an unchanged upstream (``app.carry``)."""
    upstream = config.model_dump(mode="json", exclude=set(LANE_VIEW))
    named = orjson.dumps(upstream, option=orjson.OPT_SORT_KEYS)
    return SourceSettings(
        provider=config.provider,
        model=config.model,
        priority=config.priority,
        weight=config.weight,
        deployment=config.deployment,
        quota_group=config.quota_group,
        context_window=config.context_window,
        accepts_prefill=config.accepts_prefill,
        upstream=hashlib.sha256(named).hexdigest(),
    )


def routes(config: LanewayConfig) -> Routes:
    """The aliases and each lane's fallback chain (``LanewayConfig.fallback_chain``)."""
    chains = {name: tuple(config.fallback_chain(name)) for name in config.lanes}
    return Routes(dict(config.aliases), chains)


def hedging(config: LaneConfig) -> Hedging | None:
    """The lane's hedge as policy objects, or ``None`` when it declares none."""
    hedge = config.hedge
    if hedge is None:
        return None
    fixed = hedge.after if isinstance(hedge.after, float) else None
    percentile = None if fixed is not None else PERCENTILES[str(hedge.after)]
    limits = HedgeLimits(fixed, percentile, hedge.max_share, config.per_attempt)
    return Hedging(limits, HedgeBudget(hedge.max_share))


def breaker_limits(config: BreakerConfig) -> BreakerLimits:
    """A breaker configuration as the policy's limits."""
    return BreakerLimits(failures=config.failures, window=config.window, cooldown=config.cooldown)


def retry_policy(config: LaneConfig) -> RetryPolicy:
    """The lane's retry semantics as a pure policy object.

    A ``retry_on`` list lets each listed class spend every retry; a map gives
    each its own count.
    """
    b = config.backoff
    listed = config.retry_on
    counts = (
        {str(label): count for label, count in listed.items()}
        if isinstance(listed, dict)
        else dict.fromkeys((str(label) for label in listed), config.retries)
    )
    return RetryPolicy(
        retries=config.retries,
        retry_on=counts,
        backoff=Backoff(kind=b.kind, base=b.base, cap=b.cap, jitter=b.jitter),
        min_attempt=config.min_attempt,
        max_pushback_wait=config.max_pushback_wait,
        max_pushbacks=config.max_pushbacks,
        per_class=isinstance(listed, dict),
    )


def worst_case(config: LaneConfig) -> float:
    """The longest one call of the lane can take: its retry schedule, capped by its deadline."""
    return retry_policy(config).worst_case(config.per_attempt, config.deadline)


def quota_limits(
    config: UpstreamConfig, groups: Mapping[str, QuotaGroupConfig] | None = None
) -> QuotaLimits | None:
    """The source's quota (its group's when it has one), or ``None`` when it has none."""
    limits: UpstreamConfig | QuotaGroupConfig = config
    if config.quota_group is not None and groups is not None and config.quota_group in groups:
        limits = groups[config.quota_group]
    if limits.rpm is None and limits.tpm is None:
        return None
    return QuotaLimits(rpm=limits.rpm, tpm=limits.tpm, est_tokens=config.est_tokens)


def pacer_limits(config: UpstreamConfig) -> PacerLimits | None:
    """The source's AIMD range, or ``None`` when its concurrency is not limited."""
    c = config.concurrency
    if c is None:
        return None
    return PacerLimits(min=c.min, max=c.max, initial=c.initial, cut_factor=c.cut_factor)
