"""Which sources an attempt may try, in which order, and what to do if none can run.

Order: credible, then demoted, then non-credible sources (by health); within a
tier by ``priority``, then by weighted turns, so peers share the load in
proportion to their ``weight``. A source that failed twice in this call
yields to the first untried candidate whose health is at least half its own:
unconditional yielding pushed calls onto known-bad sources.

Two things move a source to the back whatever its rank: a timeout or a
refused connection in this call (it is not tried again while another source
can run), and a Retry-After mark another call received (this call has no
claim on the source's time). After an error status the call goes back to
the source it prefers, waiting its backoff or Retry-After there (``revisit``)
rather than spilling onto a lower-ranked fallback.

Planning never refuses a lane outright. When every source's breaker is open,
the least recently failed source is tried anyway (panic): a breaker exists to
shift load between sources, and a lane with nowhere to shift it must keep
trying rather than fail every call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from laneway.core.outcomes import LogSummary
from laneway.core.values import value
from laneway.policy.breaker import BreakerLimits
from laneway.policy.health import HealthPolicy, Tier
from laneway.policy.waits import ADMIT, BACKOFF, Admit, Probe, Wait, soonest

YIELD_AFTER_FAILURES = 2


@value
class Candidate:
    """What selection knows about one source at the time of a pick.

    ``gate`` is the breaker's decision; ``blocked`` a local wait (a pushback
    mark the lane honours, or a full concurrency limit); ``failures`` counts
    this call's own failures on the source. ``revisit`` is this call's wait
    before going back to a source that failed; ``set_aside`` marks a source
    that timed out or refused the connection in this call; ``pushed_back`` a
    Retry-After mark that only steers (the call will not wait for it).
    """

    name: str
    health: float
    gate: Admit | Probe | Wait
    priority: int = 0
    weight: float = 1.0
    blocked: Wait | None = None
    failures: int = 0
    last_failure: float | None = None
    revisit: Wait | None = None
    set_aside: bool = False
    pushed_back: bool = False


@value
class Try:
    """One source to ask the quota store for, in order; ``panic`` ignores its breaker."""

    name: str
    probe: bool = False
    panic: bool = False


@value
class Plan:
    """The sources to try, in order, and the waits of those that cannot run now."""

    tries: tuple[Try, ...]
    waits: tuple[Wait, ...]


@dataclass(slots=True)
class Turns:
    """Smooth weighted round robin among peers (same tier and priority).

    Each peer earns its weight per pick and the picked one pays the peers'
    total, so over time peers are picked in proportion to their weight, and
    equal weights take turns in listed order.
    """

    credit: dict[str, float] = field(default_factory=dict)

    def standing(self, candidate: Candidate) -> float:
        """Higher goes first among peers."""
        return self.credit.get(candidate.name, 0.0) + candidate.weight

    def took(self, name: str, peers: Sequence[Candidate]) -> None:
        """Record that ``name`` was picked among ``peers`` (which include it)."""
        for peer in peers:
            self.credit[peer.name] = self.credit.get(peer.name, 0.0) + peer.weight
        self.credit[name] = self.credit.get(name, 0.0) - sum(p.weight for p in peers)


def order(candidates: Sequence[Candidate], turns: Turns, health: HealthPolicy) -> list[Candidate]:
    """Candidates in the order an attempt should try them."""
    if len(candidates) < 2:
        return list(candidates)
    position = {c.name: i for i, c in enumerate(candidates)}
    ranked = sorted(
        candidates,
        key=lambda c: (
            c.set_aside,
            c.pushed_back,
            health.tier(c.health),
            c.priority,
            -turns.standing(c),
            position[c.name],
        ),
    )
    return _yield_after_failures(ranked)


def peers(chosen: str, candidates: Sequence[Candidate], health: HealthPolicy) -> list[Candidate]:
    """The candidates that share ``chosen``'s tier and priority (for ``Turns.took``)."""
    by_name = {c.name: c for c in candidates}
    key = _peer_key(by_name[chosen], health)
    return [c for c in candidates if _peer_key(c, health) == key]


def plan(candidates: Sequence[Candidate], turns: Turns, health: HealthPolicy) -> Plan:
    """The sources to try in order, and the waits of the others.

    Sources ranked below one the call waits to revisit are not tried: the
    call waits for the source it prefers.
    """
    tries: list[Try] = []
    waits: list[Wait] = []
    for candidate in order(candidates, turns, health):
        if candidate.blocked is not None:
            waits.append(candidate.blocked)
        elif isinstance(candidate.gate, Wait):
            waits.append(candidate.gate)
        elif candidate.revisit is not None:
            waits.append(candidate.revisit)
            return Plan(tuple(tries), tuple(waits))
        else:
            tries.append(Try(candidate.name, probe=isinstance(candidate.gate, Probe)))
    panic = panic_choice(candidates)
    if panic is not None and panic.revisit is not None:
        waits.append(panic.revisit)
    elif panic is not None:
        tries.append(Try(panic.name, panic=True))
    return Plan(tuple(tries), tuple(waits))


def panic_choice(candidates: Sequence[Candidate]) -> Candidate | None:
    """The source to try anyway when no breaker of the lane is closed.

    The least recently failed of those no local gate blocks. One this call
    waits to revisit (its backoff after an error status) stays the choice:
    the call waits out that backoff, never the breaker's cooldown, so a lone
    failing source keeps answering with its own failure.
    """
    for candidate in candidates:
        if isinstance(candidate.gate, Admit):
            return None
    free = [c for c in candidates if c.blocked is None]
    if not free:
        return None
    return min(free, key=_panic_rank)


def _panic_rank(candidate: Candidate) -> tuple[bool, float]:
    """Sources free now before those the call waits to revisit, then least recently failed."""
    last = -math.inf if candidate.last_failure is None else candidate.last_failure
    return candidate.revisit is not None, last


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One source of a lane as ``failing_walk`` sees it: its name, rank, breaker and ``rpm``.

    ``breaker`` is ``None`` when the walk's failures do not count for it (a
    429); ``rpm`` requests fit in ``held_for`` seconds (a failure settles its
    tokens at zero, so a ``tpm`` never holds a failing walk back).
    """

    name: str
    priority: int = 0
    weight: float = 1.0
    breaker: BreakerLimits | None = None
    rpm: int | None = None
    held_for: float = 61.0


@dataclass(frozen=True, slots=True)
class WalkTime:
    """The time a failing walk runs in: each retry's backoff, the deadline, ``min_attempt``.

    The default (no backoff, no deadline) is a walk that time never cuts.
    """

    backoffs: Sequence[float] = ()
    """The wait before retry ``n`` is ``backoffs[n - 1]`` (0 past the end)."""
    deadline: float = math.inf
    min_attempt: float = 0.0


TIMELESS = WalkTime()


def failing_walk(
    sources: Sequence[SourceSpec],
    attempts: int,
    health: HealthPolicy,
    *,
    set_aside: bool,
    time: WalkTime = TIMELESS,
) -> list[str]:
    """The sources a call's ``attempts`` go to when every one of them fails at once.

    For a lane with no history and no Retry-After: each failure lowers the
    source's health as a fresh failure does (``prior / (prior + failures)``),
    counts for this call and, where the source's ``breaker`` counts it, for
    its breaker, which opens, turns half-open and panics as ``plan`` reads
    it; each attempt takes one of the source's ``rpm``; ``set_aside`` for
    timeouts and refused connections, which move the source to the back.
    Each attempt goes to ``plan``'s first try. Going back to a source waits
    its backoff; a backoff that cannot fit before the
    deadline (with ``min_attempt`` after it) leaves that source for the rest
    of the call, which moves on at once, or ends when no other source is left.
    """
    walk = _Walk(sources, health, set_aside)
    left, names = list(sources), []
    for retry in range(1, attempts + 1):
        chosen = walk.pick(left, time)
        if chosen is None:
            break
        names.append(chosen)
        walk.failed(chosen)
        wait = time.backoffs[retry - 1] if retry <= len(time.backoffs) else 0.0
        remaining = time.deadline - walk.now
        if wait + time.min_attempt <= remaining:
            walk.ready[chosen] = walk.now + wait
        elif remaining < time.min_attempt or len(left) == 1:
            break
        else:
            left = [s for s in left if s.name != chosen]
    return names


class _Walk:
    """A failing walk's state: the time, each source's failures and when it may be revisited."""

    def __init__(self, sources: Sequence[SourceSpec], health: HealthPolicy, aside: bool) -> None:
        self.health, self.aside, self.now, self.turns = health, aside, 0.0, Turns()
        self.failures = {source.name: 0 for source in sources}
        self.failed_at: dict[str, list[float]] = {source.name: [] for source in sources}
        self.ready = dict.fromkeys(self.failures, 0.0)

    def pick(self, left: Sequence[SourceSpec], time: WalkTime) -> str | None:
        """``plan``'s first try, after the waits it names; ``None`` when one would not fit."""
        while True:
            candidates = [self._candidate(source) for source in left]
            planned = plan(candidates, self.turns, self.health)
            if planned.tries:
                chosen = planned.tries[0].name
                if len(candidates) > 1:
                    self.turns.took(chosen, peers(chosen, candidates, self.health))
                return chosen
            wait = soonest(planned.waits)
            if wait is None or self.now + wait.seconds + time.min_attempt > time.deadline:
                return None
            self.now += wait.seconds

    def failed(self, name: str) -> None:
        """The attempt on ``name`` failed now."""
        self.failures[name] += 1
        self.failed_at[name].append(self.now)

    def _candidate(self, source: SourceSpec) -> Candidate:
        failures, failed_at = self.failures[source.name], self.failed_at[source.name]
        last = failed_at[-1] if failed_at else None
        gate: Admit | Probe | Wait = ADMIT
        if source.breaker is not None:
            gate = source.breaker.gate(
                LogSummary(self.now, 0.0, 0.0, tuple(failed_at), last), self.now
            )
        ready = self.ready[source.name] - self.now
        sent = [at for at in failed_at if at > self.now - source.held_for]
        full = source.rpm is not None and len(sent) >= source.rpm
        blocked = Wait(sent[0] + source.held_for - self.now, "quota", source.name) if full else None
        return Candidate(
            source.name,
            self.health.prior_weight / (self.health.prior_weight + failures),
            gate,
            source.priority,
            source.weight,
            blocked,
            failures=failures,
            last_failure=last if source.breaker is not None else None,
            revisit=Wait(ready, BACKOFF, source.name) if ready > 0 else None,
            set_aside=self.aside and failures > 0,
        )


def _yield_after_failures(ranked: list[Candidate]) -> list[Candidate]:
    if not ranked or ranked[0].failures < YIELD_AFTER_FAILURES:
        return ranked
    head = ranked[0]
    for index, candidate in enumerate(ranked[1:], start=1):
        if candidate.failures == 0 and candidate.health >= head.health / 2:
            return [candidate, *ranked[:index], *ranked[index + 1 :]]
    return ranked


def _peer_key(candidate: Candidate, health: HealthPolicy) -> tuple[Tier, int]:
    return health.tier(candidate.health), candidate.priority
