"""Where each lane and source stands now, as admission would judge it: for the status page.

Read at render time, never on a call's path: one ``SourceStore.peek`` per
lane fetches the shared records and quota use (one Redis round trip when
state is shared), then the same policies admission uses turn them into a
health score and tier, a breaker state, and this process's AIMD limit and
Retry-After marks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from laneway.core.clock import TimeSource
from laneway.core.outcomes import EMPTY_RECORD, LogSummary, SourceRecord
from laneway.engine.lane import Lane, Source
from laneway.policy.health import Tier
from laneway.policy.outcome import summarize
from laneway.state.admission.base import QuotaUse, SourceStore

TIER_NAMES = {
    Tier.CREDIBLE: "credible",
    Tier.DEMOTED: "demoted",
    Tier.NON_CREDIBLE: "non-credible",
}


@dataclass(frozen=True, slots=True)
class Quota:
    """A source's quota window: its limits and what it holds now."""

    rpm: int | None
    tpm: int | None
    used: QuotaUse
    shared_with: str | None
    """The quota group whose window this is, when the source shares one."""


@dataclass(frozen=True, slots=True)
class Concurrency:
    """The source's AIMD limit in this process: where it stands and what is in flight."""

    limit: float
    in_flight: int
    min: int
    max: int


@dataclass(frozen=True, slots=True)
class SourceStanding:
    """One source now. ``breaker`` is ``closed``, ``open`` or ``half-open``."""

    name: str
    provider: str
    model: str
    problems: tuple[str, ...]
    health: float
    tier: str
    breaker: str
    reopens_in: float | None
    """Seconds until an open breaker lets a probe through."""
    last_failure: str | None
    """The latest logged failure's code, and how long ago (``timeout 12 s ago``)."""
    pushed_back_for: float
    concurrency: Concurrency | None
    quota: Quota | None
    tried: bool
    """False while no attempt on the source is logged: its health is then no evidence."""

    @property
    def ready(self) -> bool:
        """True when nothing (an unset key) keeps the source from being called."""
        return not self.problems


@dataclass(frozen=True, slots=True)
class LaneStanding:
    """One lane now: its readiness, its panic flag and each source's standing.

    ``fallbacks`` are the lanes its failures fall back to, in order;
    ``serves_via`` the lane answering its calls (itself when ready, else the
    first ready lane of its fallbacks, ``None`` when none is).
    """

    name: str
    kind: str
    problems: tuple[str, ...]
    panicking: bool
    sources: tuple[SourceStanding, ...]
    fallbacks: tuple[str, ...] = ()
    serves_via: str | None = None
    deadline: float | None = None
    """The lane's enforced deadline: no call, so no latency figure, runs past it."""

    @property
    def ready(self) -> bool:
        """True when at least one source can run."""
        return not self.problems


async def stand(
    lanes: dict[str, Lane],
    store: SourceStore,
    clock: TimeSource,
    chain: Callable[[str], list[str]] | None = None,
) -> list[LaneStanding]:
    """Every lane's standing, in config order; ``chain`` gives a lane's fallback chain
    (``LanewayConfig.fallback_chain``: the lane, then its fallback lanes)."""
    standings = []
    for lane in lanes.values():
        walk = chain(lane.name) if chain is not None else [lane.name]
        via = next((name for name in walk if not lanes[name].problems), None)
        standings.append(await _lane(lane, store, clock, tuple(walk[1:]), via))
    return standings


async def _lane(
    lane: Lane, store: SourceStore, clock: TimeSource, fallbacks: tuple[str, ...], via: str | None
) -> LaneStanding:
    quotas = {s.quota_key: s.quota.held_for for s in lane.sources if s.quota is not None}
    peek = await store.peek(lane.scope, lane.source_keys, list(quotas.items()))
    now = clock.now()
    sources = tuple(
        _source(lane, source, peek.records.get(source.key, EMPTY_RECORD), peek.quotas, now)
        for source in lane.sources
    )
    return LaneStanding(
        lane.name,
        lane.kind,
        tuple(lane.problems),
        lane.memory.panicking,
        sources,
        fallbacks,
        via,
        lane.config.deadline,
    )


def _source(
    lane: Lane, source: Source, record: SourceRecord, quotas: Mapping[str, QuotaUse], now: float
) -> SourceStanding:
    log = summarize(record, lane.health.half_life)
    score = lane.health.score(log, now)
    limits = source.breaker or lane.breaker
    reopens = limits.reopens_at(log)
    if reopens is None:
        breaker, reopens_in = "closed", None
    elif now < reopens:
        breaker, reopens_in = "open", reopens - now
    else:
        breaker, reopens_in = "half-open", 0.0
    return SourceStanding(
        source.name,
        source.config.provider,
        source.config.model,
        tuple(source.problems),
        score,
        TIER_NAMES[lane.health.tier(score)],
        breaker,
        reopens_in,
        _last_failure(record, log, now),
        lane.memory.pushed_back_for(source, now),
        _concurrency(lane, source),
        _quota(source, quotas),
        bool(record.marks),
    )


def _last_failure(record: SourceRecord, log: LogSummary, now: float) -> str | None:
    if log.last_failure is None:
        return None
    code = next((m.code for m in reversed(record.marks) if m.at == log.last_failure), "failed")
    return f"{code} {now - log.last_failure:.0f} s ago"


def _concurrency(lane: Lane, source: Source) -> Concurrency | None:
    """The source's pacer as it stands, its starting point while no attempt has made one."""
    limits = source.pacing
    if limits is None:
        return None
    pacer = lane.memory.pacers.get(source.key)
    if pacer is None:
        return Concurrency(float(limits.start), 0, limits.min, limits.max)
    return Concurrency(pacer.limit, pacer.in_flight, limits.min, limits.max)


def _quota(source: Source, quotas: Mapping[str, QuotaUse]) -> Quota | None:
    if source.quota is None:
        return None
    used = quotas.get(source.quota_key, QuotaUse())
    group = source.config.quota_group
    return Quota(source.quota.rpm, source.quota.tpm, used, group)
