"""Candidate settings for a lane, scored against its recorded calls, and the pick.

A candidate is an ``attempt_timeout`` at a percentile of the answers seen, a
retry count, the lane's backoff, and the deadline that fits the caller: the
schedule's worst case, capped by ``client_deadline`` less a margin. Each is
scored by replaying the recorded calls through the call loop (see
``replay``): the share it would have answered, its p99 and worst wall, the
upstream requests it spends per call, and its margin under ``client_deadline``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from laneway.app.policies import worst_case
from laneway.config.models import ChatLaneConfig, LaneConfig, first_byte_timeout_of
from laneway.core.units import format_duration
from laneway.sizing.replay import replay
from laneway.sizing.samples import RecordedCall, answer_times, percentile

DEFAULT_PERCENTILES = (90.0, 99.0, 99.9)
RETRY_RANGE = range(4)
SHARE_TOLERANCE = 0.001
"""Candidates answering within 0.1 percentage point of the best count as equally good."""


@dataclass(frozen=True, slots=True)
class CandidateSettings:
    """One candidate: what goes in laneway.yaml, and where it came from (``label``)."""

    label: str
    attempt_timeout: float
    retries: int
    deadline: float
    first_byte_timeout: float | None = None

    def apply(self, config: LaneConfig) -> LaneConfig:
        """``config`` with these settings in place (the rest of the lane unchanged)."""
        update: dict[str, object] = {
            "attempt_timeout": self.attempt_timeout,
            "retries": self.retries,
            "deadline": self.deadline,
        }
        if self.first_byte_timeout is not None and isinstance(config, ChatLaneConfig):
            update["first_byte_timeout"] = self.first_byte_timeout
        return config.model_copy(update=update)


@dataclass(frozen=True, slots=True)
class Score:
    """How a candidate would have done on the recorded calls."""

    settings: CandidateSettings
    answered: float
    cut: float
    p99_wall: float
    max_wall: float
    worst_case: float
    requests: float
    margin: float | None


@dataclass(frozen=True, slots=True)
class Goal:
    """What the caller needs: its own deadline, the margin to keep under it."""

    client_deadline: float | None
    margin: float


def nice_ceiling(seconds: float) -> float:
    """The next value above ``seconds`` worth writing in a config.

    Steps of 100 ms below 2 s, 0.5 s below 10 s, then 1 s; always strictly
    above, so an answer as slow as the percentile is not cut by a tie.
    """
    step = 0.1 if seconds < 2 else 0.5 if seconds < 10 else 1.0
    return round((math.floor(seconds / step + 1e-9) + 1) * step, 3)


def candidates(
    config: LaneConfig,
    calls: Sequence[RecordedCall],
    goal: Goal,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
) -> list[CandidateSettings]:
    """The lane's current settings, then each percentile's timeout with 0..3 retries."""
    answers = sorted([*answer_times(calls, stream=False), *answer_times(calls, stream=True)])
    firsts = answer_times(calls, stream=True)
    out = [_current(config, goal)]
    if not answers:
        return out
    for pct in percentiles:
        timeout = nice_ceiling(percentile(answers, pct))
        first_byte = nice_ceiling(percentile(firsts, pct)) if firsts else None
        for retries in RETRY_RANGE:
            label = f"p{pct:g}"
            deadline = _deadline(config, timeout, retries, goal)
            out.append(CandidateSettings(label, timeout, retries, deadline, first_byte))
    return _distinct(out)


def score(
    name: str,
    config: LaneConfig,
    calls: Sequence[RecordedCall],
    settings: CandidateSettings,
    goal: Goal,
) -> Score:
    """Replay ``calls`` under ``settings`` and sum up the result."""
    lane = settings.apply(config)
    results = replay(name, lane, calls)
    walls = sorted(r.wall for r in results)
    answers = [*answer_times(calls, stream=False), *answer_times(calls, stream=True)]
    cut = sum(1 for t in answers if t > settings.attempt_timeout) / len(answers) if answers else 0.0
    p99 = percentile(walls, 99) if walls else 0.0
    return Score(
        settings,
        answered=sum(r.answered for r in results) / len(results) if results else 0.0,
        cut=cut,
        p99_wall=p99,
        max_wall=walls[-1] if walls else 0.0,
        worst_case=worst_case(lane),
        requests=sum(r.requests for r in results) / len(results) if results else 0.0,
        margin=None if goal.client_deadline is None else goal.client_deadline - p99,
    )


def recommend(scores: Sequence[Score], goal: Goal) -> tuple[Score, str] | None:
    """The candidate to use and why, in one sentence; ``None`` when none fits the caller."""
    fitting = [s for s in scores if _fits(s, goal)]
    if not fitting:
        return None
    best = max(s.answered for s in fitting)
    good = [s for s in fitting if s.answered >= best - SHARE_TOLERANCE]
    pick = min(good, key=lambda s: (round(s.requests, 2), s.worst_case, s.p99_wall))
    return pick, _reason(pick, best, goal)


def _current(config: LaneConfig, goal: Goal) -> CandidateSettings:
    return CandidateSettings(
        "current",
        config.per_attempt,
        config.retries,
        config.deadline,
        first_byte_timeout_of(config),
    )


def _deadline(config: LaneConfig, timeout: float, retries: int, goal: Goal) -> float:
    """The schedule's worst case, capped by what the caller's deadline leaves.

    The schedule is the attempts and their backoffs. A ``Retry-After`` up to
    ``max_pushback_wait`` (30 s) is left out: counted for every retry it set
    every candidate with a retry to the caller's whole budget. The deadline
    keeps a longer wait from starting (it ends the call at once), and the
    replay scores what that costs on the recorded calls.
    """
    update = {"attempt_timeout": timeout, "retries": retries, "deadline": math.inf}
    probe = config.model_copy(update={**update, "max_pushback_wait": 0.0})
    need = nice_ceiling(worst_case(probe))
    if goal.client_deadline is None:
        return need
    return min(need, max(goal.client_deadline - goal.margin, timeout))


def _fits(score: Score, goal: Goal) -> bool:
    if goal.client_deadline is None:
        return True
    budget = goal.client_deadline - goal.margin
    return score.worst_case <= budget + 1e-9 and score.p99_wall <= budget + 1e-9


def _distinct(settings: list[CandidateSettings]) -> list[CandidateSettings]:
    seen: set[tuple[float, int, float, float | None]] = set()
    out: list[CandidateSettings] = []
    for s in settings:
        key = (s.attempt_timeout, s.retries, s.deadline, s.first_byte_timeout)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _reason(pick: Score, best: float, goal: Goal) -> str:
    s = pick.settings
    text = (
        f"attempt_timeout {format_duration(s.attempt_timeout)} with retries {s.retries} "
        f"would have answered {pick.answered:.1%} of the recorded calls (best {best:.1%}) "
        f"at {pick.requests:.2f} upstream requests per call, p99 wall "
        f"{format_duration(pick.p99_wall)}"
    )
    if goal.client_deadline is not None and pick.margin is not None:
        text += (
            f", {format_duration(goal.client_deadline - pick.worst_case)} under client_deadline "
            f"{format_duration(goal.client_deadline)} even in the worst case"
        )
    return text + "."
