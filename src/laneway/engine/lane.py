"""A lane ready to run: its sources bound to adapters, its policies built.

The lane is built by ``laneway.app.lanes`` (which binds each source to its
provider adapter through the registry); here are the lane's shape and the
translation of its settings into policy objects, which need no adapter.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from laneway.config.models import (
    BreakerConfig,
    LaneConfig,
    QuotaGroupConfig,
    SourceConfig,
    UpstreamConfig,
)
from laneway.core.errors import RequestInvalid
from laneway.core.outcomes import SourceRecord
from laneway.core.types import ChatRequest
from laneway.policy.backoff import Backoff
from laneway.policy.breaker import BreakerLimits
from laneway.policy.health import HealthPolicy
from laneway.policy.hedge import PERCENTILES, AnswerTimes, HedgeBudget, HedgeLimits
from laneway.policy.pacer import Pacer, PacerLimits
from laneway.policy.quota import QuotaLimits
from laneway.policy.retry import RetryPolicy
from laneway.policy.selection import Turns
from laneway.policy.stall import StallWatch
from laneway.policy.waits import Wait
from laneway.providers.base import Provider

SHARED_SCOPE = "deployments"
"""The store scope of every lane that names a deployment: their sources' states
are keyed in one namespace, so a deployment is the same state in each lane."""


@dataclass(slots=True)
class Source:
    """One upstream of a lane, with its adapter and what keeps it from running.

    ``key`` names the source's state (outcome log, breaker, probe lease,
    pacer, pushback marks) in its lane's scope: a deployment's key is the
    same in every lane that names it. ``quota_key`` names its quota window:
    its quota group's when it has one, else its own.
    """

    name: str
    config: SourceConfig
    provider: Provider
    problems: list[str] = field(default_factory=list)
    quota: QuotaLimits | None = None
    pacing: PacerLimits | None = None
    key: str = ""
    quota_key: str = ""
    breaker: BreakerLimits | None = None
    """The upstream's own breaker, or ``None`` for the lane's."""

    def __post_init__(self) -> None:
        self.key = self.key or self.name
        self.quota_key = self.quota_key or self.key

    @property
    def ready(self) -> bool:
        """True when nothing keeps the source from being called."""
        return not self.problems


@dataclass(slots=True)
class LaneMemory:
    """What this process keeps about a lane's sources between calls.

    Admission's working memory: the store's latest records, weighted turns,
    AIMD pacers, pushback marks (when each source's last Retry-After ends),
    and the picks waiting for a release. Records, pacers, marks and waiters
    are keyed by ``Source.key``; lanes that name deployments share these four
    (``sharing``), so a deployment's concurrency and Retry-After marks are
    one, while turns stay the lane's.
    """

    records: dict[str, SourceRecord] = field(default_factory=dict)
    turns: Turns = field(default_factory=Turns)
    pacers: dict[str, Pacer] = field(default_factory=dict)
    pushed_back: dict[str, float] = field(default_factory=dict)
    waiters: dict[asyncio.Event, None] = field(default_factory=dict)
    """Waiting picks in the order they began to wait (a dict keeps it; a set would not)."""
    panicking: bool = False

    def last_progress(self, keys: Iterable[str]) -> float | None:
        """When any of the lane's sources (``keys``) last succeeded, as far as the store told us."""
        records = (self.records.get(key) for key in keys)
        ends = [r.last_ok for r in records if r is not None and r.last_ok is not None]
        return max(ends, default=None)

    def pacer(self, source: Source) -> Pacer | None:
        """The source's pacer, or ``None`` when its concurrency is not limited."""
        if source.pacing is None:
            return None
        pacer = self.pacers.get(source.key)
        if pacer is None:
            pacer = self.pacers[source.key] = Pacer(source.pacing)
        return pacer

    def pushed_back_for(self, source: Source, now: float) -> float:
        """Seconds until the source's Retry-After ends (0 when it asked for no wait)."""
        return max(self.pushed_back.get(source.key, -math.inf) - now, 0.0)

    def full(self, source: Source) -> Wait | None:
        """The wait for a slot when the source's concurrency limit is full."""
        pacer = self.pacer(source)
        gate = pacer.gate() if pacer is not None else None
        return gate if isinstance(gate, Wait) else None

    def sharing(self) -> LaneMemory:
        """A lane's memory over these records, pacers, marks and waiters, with its own turns."""
        return LaneMemory(
            records=self.records,
            pacers=self.pacers,
            pushed_back=self.pushed_back,
            waiters=self.waiters,
        )

    def notify(self) -> None:
        """Wake every waiting pick, first come first woken: a slot, reservation or record changed.

        The order is the waits' own, not the events' addresses, so picks take
        freed capacity fairly and a run on a ``VirtualClock`` is reproducible.
        """
        for waiter in self.waiters:
            waiter.set()
        self.waiters.clear()


@dataclass(slots=True)
class Hedging:
    """A hedged lane's policy and what it keeps between calls: its budget and answer times."""

    limits: HedgeLimits
    budget: HedgeBudget
    answered: AnswerTimes = field(default_factory=AnswerTimes)


def hedging(config: LaneConfig) -> Hedging | None:
    """The lane's hedge as policy objects, or ``None`` when it declares none."""
    hedge = config.hedge
    if hedge is None:
        return None
    fixed = hedge.after if isinstance(hedge.after, float) else None
    percentile = None if fixed is not None else PERCENTILES[str(hedge.after)]
    limits = HedgeLimits(fixed, percentile, hedge.max_share, config.per_attempt)
    return Hedging(limits, HedgeBudget(hedge.max_share))


@dataclass(slots=True)
class Lane:
    """A named route: sources in priority order and the enforced policies."""

    name: str
    config: LaneConfig
    sources: list[Source]
    policy: RetryPolicy
    breaker: BreakerLimits = field(default_factory=BreakerLimits)
    health: HealthPolicy = field(default_factory=HealthPolicy)
    stall: StallWatch = field(default_factory=StallWatch)
    memory: LaneMemory = field(default_factory=LaneMemory)
    problems: list[str] = field(init=False)
    """Why the lane cannot run (empty when at least one source is ready).

    Sources' readiness is settled when the lane is built (keys resolve once),
    so it and what follows from it are computed once here, not on every call.
    """
    runnable: list[Source] = field(init=False)
    """The ready sources, in priority order."""
    source_names: tuple[str, ...] = field(init=False)
    named: dict[str, Source] = field(init=False)
    """The sources by name: each call's record looks up the one that answered."""
    source_keys: tuple[str, ...] = field(init=False)
    scope: str = field(init=False)
    """The store scope of the sources' states: the lane's name, or ``SHARED_SCOPE``."""
    paced: bool = field(init=False)
    """Whether any source limits its concurrency (AIMD)."""
    hedging: Hedging | None = field(init=False)
    """The lane's hedge (``None``: no hedge, and no hedge work on its calls)."""

    def __post_init__(self) -> None:
        self.runnable = [source for source in self.sources if source.ready]
        self.problems = [] if self.runnable else [p for s in self.sources for p in s.problems]
        self.source_names = tuple(source.name for source in self.sources)
        self.named = {source.name: source for source in self.sources}
        self.source_keys = tuple(dict.fromkeys(s.key for s in self.sources))
        shared = any(source.config.deployment is not None for source in self.sources)
        self.scope = SHARED_SCOPE if shared else self.name
        self.paced = any(source.pacing is not None for source in self.sources)
        self.hedging = hedging(self.config)

    @property
    def kind(self) -> str:
        """``chat`` or ``embed``."""
        return self.config.kind

    def refuse_inexpressible(self, request: ChatRequest, *, stream: bool) -> None:
        """Refuse ``request`` before any attempt when no ready source can carry it.

        When some can, the call loop skips the others as it meets them (see
        ``Inexpressible``). The refusal names the first source's reason.
        """
        first = None
        for source in self.runnable:
            refusal = source.provider.inexpressible(request, stream=stream)
            if refusal is None:
                return
            first = first or refusal
        if first is not None:
            raise RequestInvalid(
                first.field, f"{first.reason}; no source of lane {self.name} can carry it"
            )


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
