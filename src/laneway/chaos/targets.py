"""Each scenario's targets, judged on its metrics: stated, measured, met or not.

The targets are benchmarks, not tests: ``laneway simulate`` reports them
honestly and still exits 0 when one is missed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from laneway.chaos.metrics import ScenarioTally
from laneway.chaos.scenarios import Scenario

MAX_LATE_THROTTLED = 0.02
MIN_CAP_USE = 0.95
MIN_POOL_SUCCESS = 0.99
MAX_POOL_ATTEMPTS = 1.3
ANSWERED_REQUEST = 7
HEDGED_P99 = 1.0
"""Seconds under which scenario 7's p99 must fall at scale 1 (5x under the 5 s tail)."""
MAX_HEDGED_ATTEMPTS = 1.1
"""Upstream requests per success scenario 7 may spend (issue 26: at most 10% more)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One target: what it asks, what was measured, and whether it was met."""

    goal: str
    measured: str
    met: bool


def judge_scenario(scenario: Scenario, metrics: ScenarioTally) -> list[Target]:
    """The scenario's targets, judged."""
    return _JUDGES[scenario.key](scenario, metrics)


def _throttle(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    cap = scenario.cap_rpm or 0
    offered = scenario.load.per_second * 60.0
    floor = MIN_CAP_USE * min(cap, offered)
    return [
        Target(
            f"429s < {MAX_LATE_THROTTLED:.0%} of upstream calls after {scenario.warmup:g} s",
            f"{m.late_throttled_share:.1%}",
            m.late_throttled_share < MAX_LATE_THROTTLED,
        ),
        Target(
            f"successes at the cap: >= {floor:.1f}/min ({MIN_CAP_USE:.0%} of {cap} rpm)",
            f"{m.ok_per_minute:.1f}/min",
            m.ok_per_minute >= floor,
        ),
    ]


def _pool(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    return [
        Target(
            f"success >= {MIN_POOL_SUCCESS:.0%}",
            f"{m.success_rate:.1%}",
            m.success_rate >= MIN_POOL_SUCCESS,
        ),
        Target(
            f"attempts per success < {MAX_POOL_ATTEMPTS}",
            f"{m.attempts_per_ok:.2f}",
            m.attempts_per_ok < MAX_POOL_ATTEMPTS,
        ),
    ]


def _slow(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    deadline = scenario.policy.deadline
    return [
        Target("no deadline overruns", str(m.overruns), m.overruns == 0),
        Target(f"p99 < deadline {deadline:g} s", f"{m.p99:.2f} s", m.p99 < deadline),
    ]


def _recovery(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    answered = len(m.answered) >= ANSWERED_REQUEST and m.answered[ANSWERED_REQUEST - 1]
    shown = "".join("ok " if ok else "x " for ok in m.answered).strip() or "no calls"
    return [Target(f"request {ANSWERED_REQUEST} answered", shown, answered)]


def _replicas(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    cap = scenario.cap_rpm or 0
    return [
        Target(
            f"upstream sees <= {cap} requests in any 60 s",
            f"max {m.max_per_window}",
            m.max_per_window <= cap,
        )
    ]


def _tail(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    return [Target("no deadline overruns", str(m.overruns), m.overruns == 0)]


def _hedged(scenario: Scenario, m: ScenarioTally) -> list[Target]:
    bound = HEDGED_P99 * scenario.scale
    return [
        Target(f"p99 < {bound:g} s (5x under the tail)", f"{m.p99:.2f} s", m.p99 < bound),
        Target(
            f"attempts per success <= {MAX_HEDGED_ATTEMPTS}",
            f"{m.attempts_per_ok:.2f}",
            m.attempts_per_ok <= MAX_HEDGED_ATTEMPTS,
        ),
    ]


_JUDGES: dict[str, Callable[[Scenario, ScenarioTally], list[Target]]] = {
    "throttle": _throttle,
    "pool": _pool,
    "slow": _slow,
    "recovery": _recovery,
    "replicas": _replicas,
    "tail": _tail,
    "hedged": _hedged,
}
