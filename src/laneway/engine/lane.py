"""A lane ready to run: its sources bound to adapters, its policies built.

The lane is built by ``laneway.app.lanes`` (which binds each source to its
provider adapter through the registry, and translates the configuration into
the frozen settings of ``engine.settings`` and the policy objects here, in
``app.policies``); here are the lane's shape and what the process keeps of it
between calls.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from laneway.core.errors import RequestInvalid
from laneway.core.outcomes import SourceRecord
from laneway.core.types import ChatRequest
from laneway.engine.settings import LaneSettings, SourceSettings
from laneway.policy.breaker import BreakerLimits
from laneway.policy.health import HealthPolicy
from laneway.policy.hedge import AnswerTimes, HedgeBudget, HedgeLimits
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
    config: SourceSettings
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


@dataclass(slots=True)
class Lane:
    """A named route: sources in priority order and the enforced policies."""

    name: str
    config: LaneSettings
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
    hedging: Hedging | None = None
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
