"""The five chaos scenarios as plain data, shared by every client under test.

A scenario says what the upstreams do (sim specs), what the user knows and
declares (each source's ``rpm``), the call policy a demanding user would set
(deadline, attempt timeout, retries, breaker), and the load. It carries no
client code: ``laneway.chaos.lanes`` turns it into a laneway lane, and the
LiteLLM driver in ``bench/`` into a Router, from the same values.

``build(scale, run)`` makes the specs unique to one run (``id=`` and bucket
names carry ``run``), so runs sharing one sim never share counters or
buckets, and multiplies every duration by ``scale``. Rate windows are the
exception: the sim's and laneway's ``rpm`` windows stay 60 s, so below scale
1 the throttling scenarios offer too few calls to reach their caps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from laneway.core.failures import FailureKind

KEYS = ("throttle", "pool", "slow", "recovery", "replicas", "tail", "hedged")
"""The scenarios' names, in order (``laneway simulate`` also takes their numbers)."""
RETRY_ON: tuple[int | str, ...] = (
    *(429, 500, 502, 503, 504),
    FailureKind.TIMEOUT.value,
    FailureKind.CONNECT.value,
)
"""What a demanding user retries: throttling, server errors, timeouts, refused connections."""


@dataclass(frozen=True, slots=True)
class SourcePlan:
    """One upstream: its name, its sim spec, and the ``rpm`` the user declares (if known)."""

    name: str
    spec: str
    rpm: int | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """The call policy, in terms both laneway and LiteLLM can express (seconds)."""

    deadline: float
    attempt_timeout: float
    retries: int
    breaker_failures: int
    breaker_window: float
    breaker_cooldown: float
    backoff_base: float
    backoff_cap: float
    retry_on: tuple[int | str, ...] = RETRY_ON
    hedge_after: float | None = None
    """A hedge's ``after`` (``None``: no hedge); its ``max_share`` is the default 0.1. A
    client without hedging (LiteLLM) runs the scenario without one."""


@dataclass(frozen=True, slots=True)
class Load:
    """The offered calls, per replica.

    Open loop: ``per_second`` calls a second for ``seconds``, whether or not
    earlier calls have ended. ``one_at_a_time``: ``calls`` calls in sequence,
    each ``gap`` seconds after the previous one ended.
    """

    per_second: float = 0.0
    seconds: float = 0.0
    one_at_a_time: bool = False
    calls: int = 0
    gap: float = 0.0

    @property
    def offered(self) -> int:
        """How many calls one replica makes."""
        return self.calls if self.one_at_a_time else round(self.per_second * self.seconds)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One named scenario. ``cap_rpm`` is the upstream's real limit, for the targets."""

    number: int
    key: str
    title: str
    sources: tuple[SourcePlan, ...]
    policy: Policy
    load: Load
    run: str
    replicas: int = 1
    scale: float = 1.0
    cap_rpm: int | None = None
    warmup: float = 0.0
    """Seconds from the start after which the throttling target is judged."""

    @property
    def lane(self) -> str:
        """The lane's name, unique to the run (it names the shared state's keys)."""
        return f"chaos-{self.key}-{self.run}"


def build(scale: float = 1.0, run: str = "run") -> list[Scenario]:
    """All seven scenarios with durations times ``scale`` and specs unique to ``run``."""
    if scale <= 0:
        raise ValueError("scale must be positive")
    makers = (_throttle, _pool, _slow, _recovery, _replicas, _tail, _hedged)
    return [replace(make(scale, run), scale=scale) for make in makers]


def select(scenarios: list[Scenario], wanted: list[str]) -> list[Scenario]:
    """The scenarios named by key or number (all when ``wanted`` is empty)."""
    if not wanted:
        return scenarios
    chosen = [s for s in scenarios if s.key in wanted or str(s.number) in wanted]
    known = {s.key for s in scenarios} | {str(s.number) for s in scenarios}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ValueError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    return chosen


def _policy(
    s: float,
    *,
    deadline: float,
    attempt_timeout: float,
    retries: int,
    breaker: tuple[int, float, float] = (5, 30, 10),
    backoff: tuple[float, float] = (0.1, 1),
) -> Policy:
    """A policy with every duration times ``s``; ``breaker`` is (failures, window, cooldown)."""
    failures, window, cooldown = breaker
    return Policy(
        deadline=deadline * s,
        attempt_timeout=attempt_timeout * s,
        retries=retries,
        breaker_failures=failures,
        breaker_window=window * s,
        breaker_cooldown=cooldown * s,
        backoff_base=backoff[0] * s,
        backoff_cap=backoff[1] * s,
    )


def _spec(behaviour: str, run: str, scenario: str, source: str) -> str:
    return f"{behaviour},id={run}-{scenario}-{source}"


def _throttle(s: float, run: str) -> Scenario:
    """Three keys of one account: the 30 rpm cap is shared, so each declares a third."""
    bucket = f"rpm=30,bucket=acct-{run}"
    sources = tuple(
        SourcePlan(name, _spec(bucket, run, "throttle", name), rpm=10) for name in "abc"
    )
    policy = _policy(s, deadline=30, attempt_timeout=10, retries=2, backoff=(0.5, 4))
    load = Load(per_second=1.0, seconds=120 * s)
    title = "shared 30 rpm account cap, 60 rpm offered"
    return Scenario(1, "throttle", title, sources, policy, load, run, cap_rpm=30, warmup=30 * s)


def _pool(s: float, run: str) -> Scenario:
    """One healthy source, one down 10 s of every 20 s, one always failing."""
    sources = (
        SourcePlan("healthy", _spec("ok", run, "pool", "healthy")),
        SourcePlan("flapping", _spec(f"flap={10 * s:g}", run, "pool", "flapping")),
        SourcePlan("broken", _spec("status=500", run, "pool", "broken")),
    )
    policy = _policy(s, deadline=10, attempt_timeout=3, retries=2, breaker=(3, 10, 10))
    load = Load(per_second=2.0, seconds=120 * s)
    title = "healthy + flapping (503 10 s of 20 s) + always 500"
    return Scenario(2, "pool", title, sources, policy, load, run)


def _slow(s: float, run: str) -> Scenario:
    """Two fast sources and one that answers after 8 s, under a 10 s deadline."""
    sources = (
        SourcePlan("fast1", _spec("ok", run, "slow", "fast1")),
        SourcePlan("fast2", _spec("ok", run, "slow", "fast2")),
        SourcePlan("slow", _spec(f"sleep={8 * s:g}", run, "slow", "slow")),
    )
    policy = _policy(s, deadline=10, attempt_timeout=2, retries=2, breaker=(3, 30, 10))
    load = Load(per_second=2.0, seconds=120 * s)
    title = "one source answers after 8 s, deadline 10 s"
    return Scenario(3, "slow", title, sources, policy, load, run)


def _recovery(s: float, run: str) -> Scenario:
    """One source failing its first six requests; the caller's own loop sends a seventh.

    The lane makes one attempt per request (the caller retries), so request
    N is the upstream's request N and the breaker alone decides whether the
    seventh reaches the source.
    """
    sources = (SourcePlan("only", _spec("fail_first=6,status=503", run, "recovery", "only")),)
    policy = _policy(s, deadline=10, attempt_timeout=5, retries=0, breaker=(3, 30, 30))
    load = Load(one_at_a_time=True, calls=7, gap=1 * s)
    title = "one source, 6 consecutive 503s, then healthy"
    return Scenario(4, "recovery", title, sources, policy, load, run)


def _replicas(s: float, run: str) -> Scenario:
    """Two processes share one 60 rpm source through Redis, each offering 60 rpm."""
    spec = _spec(f"rpm=60,bucket=rep-{run}", run, "replicas", "shared")
    sources = (SourcePlan("shared", spec, rpm=60),)
    policy = _policy(s, deadline=30, attempt_timeout=10, retries=2, backoff=(0.5, 4))
    load = Load(per_second=1.0, seconds=120 * s)
    title = "two replicas on Redis, one 60 rpm source, 120 rpm offered"
    return Scenario(5, "replicas", title, sources, policy, load, run, replicas=2, cap_rpm=60)


TAIL_SLOW = 5.0
"""Seconds the long-tailed source takes for one answer in twenty (scenarios 6 and 7)."""


def _tail(s: float, run: str, key: str = "tail", hedge: float | None = None) -> Scenario:
    """A source answering in 50 ms, one answer in twenty in 5 s, beside a steady one."""
    tail = f"sleep={0.05 * s:g},slow=0.05,slow_sleep={TAIL_SLOW * s:g},seed=6"
    sources = (
        SourcePlan("tail", _spec(tail, run, key, "tail")),
        SourcePlan("steady", _spec(f"sleep={0.05 * s:g}", run, key, "steady")),
    )
    policy = replace(
        _policy(s, deadline=10, attempt_timeout=8, retries=1),
        hedge_after=None if hedge is None else hedge * s,
    )
    load = Load(per_second=5.0, seconds=120 * s)
    title = "one source with a 5% tail of 5 s beside a steady one" + (
        f", hedge after {hedge * 1000:g} ms" if hedge is not None else ", no hedge"
    )
    return Scenario(6 if hedge is None else 7, key, title, sources, policy, load, run)


def _hedged(s: float, run: str) -> Scenario:
    """Scenario 6 with ``hedge: {after: 200ms}``: the slow answers are raced on the other."""
    return _tail(s, run, "hedged", hedge=0.2)
