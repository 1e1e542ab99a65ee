"""Sizing a lane's hedge: an ``after`` from the answer times, and what it does, replayed.

A hedge starts a second attempt on another source when the first has not
answered ``after`` its start (a stream: no first byte). So ``after`` belongs
just past where the answers usually come: the p90, p95 or p99 of the lane's
recorded answer times (time to first byte for streams, the whole answer
otherwise), rounded up as a timeout is (``nice_ceiling``), and the lane's own
live ``p95``. Each candidate, and the lane without a hedge, replays the
recorded calls through the engine's call loop in virtual time (``replay``):
the race, the ``max_share`` budget, admission and the loser's cancellation
are the engine's, so the predicted p50, p99 and upstream requests per call
are what the lane would do. A hedge goes to a source the first attempt did
not use; its answer time is drawn from that source's recorded attempts (the
lane's, for a source telemetry never saw), which assumes the sources' tails
are independent.

The pick is the candidate with the lowest p99 that answers as many calls as
the lane without a hedge and sends at most ``max_share`` more upstream
requests per call; a hedge that does not cut the p99 by ``MIN_GAIN`` is not
worth its requests, and none is recommended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from laneway.config.hedging import HedgeConfig
from laneway.config.models import LaneConfig
from laneway.core.units import format_duration
from laneway.sizing.candidates import SHARE_TOLERANCE, nice_ceiling
from laneway.sizing.render import table
from laneway.sizing.replay import replay
from laneway.sizing.samples import RecordedCall, answer_times, percentile

HEDGE_PERCENTILES = (90.0, 95.0, 99.0)
"""Answer-time percentiles offered as a fixed ``after``."""
LIVE = "p95"
"""The lane's live percentile, offered beside the fixed ones."""
MAX_SHARE = 0.1
"""The hedge budget candidates are replayed with (the config's default)."""
MIN_GAIN = 1.5
"""A hedge is recommended only when it divides the replayed p99 by at least this."""


@dataclass(frozen=True, slots=True)
class HedgeScore:
    """One hedge setting replayed: ``after`` (``None``: no hedge) and what it would give."""

    after: float | str | None
    p50: float
    p99: float
    answered: float
    requests: float

    @property
    def label(self) -> str:
        """``off``, ``after: 150ms`` or ``after: p95``."""
        if self.after is None:
            return "off"
        return (
            f"after: {self.after if isinstance(self.after, str) else format_duration(self.after)}"
        )


def hedge_afters(calls: Sequence[RecordedCall], stream: bool) -> list[float | str]:
    """The ``after`` candidates: the answer times' percentiles, rounded up, and ``p95``."""
    times = answer_times(calls, stream=stream) or answer_times(calls, stream=not stream)
    fixed = sorted({nice_ceiling(percentile(times, pct)) for pct in HEDGE_PERCENTILES if times})
    return [*fixed, LIVE]


def hedge_scores(
    name: str, config: LaneConfig, calls: Sequence[RecordedCall], max_share: float = MAX_SHARE
) -> list[HedgeScore]:
    """The lane without a hedge, then each ``after`` candidate that fits its attempt timeout."""
    base = config.model_copy(update={"hedge": None})
    stream = sum(call.stream for call in calls) * 2 > len(calls)
    scores = [_score(name, base, calls, None)]
    for after in hedge_afters(calls, stream):
        hedge = HedgeConfig(after=after, max_share=max_share)
        if hedge.problem(len(config.sources), config.per_attempt) is None:
            scores.append(_score(name, base.model_copy(update={"hedge": hedge}), calls, after))
    return scores


def recommend_hedge(
    scores: Sequence[HedgeScore], max_share: float = MAX_SHARE
) -> tuple[HedgeScore, str] | None:
    """The hedge to declare and why; ``None`` when none pays its extra requests."""
    off = scores[0]
    fitting = [
        s
        for s in scores[1:]
        if s.answered >= off.answered - SHARE_TOLERANCE
        and s.requests <= off.requests * (1 + max_share) + SHARE_TOLERANCE
    ]
    if not fitting:
        return None
    pick = min(fitting, key=lambda s: (s.p99, s.requests))
    if pick.p99 * MIN_GAIN > off.p99:
        return None
    extra = pick.requests / off.requests - 1 if off.requests else 0.0
    reason = (
        f"hedge {pick.label} would have cut the p99 from {format_duration(off.p99)} to "
        f"{format_duration(pick.p99)} (p50 {format_duration(off.p50)} -> "
        f"{format_duration(pick.p50)}) for {extra:.1%} more upstream requests"
    )
    return pick, reason


def _score(
    name: str, lane: LaneConfig, calls: Sequence[RecordedCall], after: float | str | None
) -> HedgeScore:
    results = replay(name, lane, calls)
    walls = sorted(r.wall for r in results)
    return HedgeScore(
        after,
        percentile(walls, 50),
        percentile(walls, 99),
        sum(r.answered for r in results) / len(results),
        sum(r.requests for r in results) / len(results),
    )


def hedge_lines(name: str, config: LaneConfig, calls: Sequence[RecordedCall]) -> list[str]:
    """``laneway size``'s hedging section: the table, the pick and its YAML, or why none."""
    if len(config.sources) < 2:
        return [f"hedging {name}: needs a second source (a hedge never goes to the same one)"]
    max_share = config.hedge.max_share if config.hedge is not None else MAX_SHARE
    scores = hedge_scores(name, config, calls, max_share)
    picked = recommend_hedge(scores, max_share)
    rows = [["", "hedge", "p50", "p99", "answered", "requests/call"]]
    for s in scores:
        mark = "*" if picked is not None and s is picked[0] else ""
        cells = [format_duration(s.p50), format_duration(s.p99), f"{s.answered:.1%}"]
        rows.append([mark, s.label, *cells, f"{s.requests:.2f}"])
    lines = [
        f"hedging {name}: the lane as configured, replayed without a hedge and with each after "
        f"(max_share {max_share:g}); a hedge's answer is drawn from the other source's "
        "recorded attempts",
        table(rows),
    ]
    if picked is None:
        return [
            *lines,
            f"no hedge recommended: none cuts the p99 by {MIN_GAIN:g}x or more "
            "within max_share more upstream requests",
        ]
    pick, reason = picked
    after = pick.after if isinstance(pick.after, str) else format_duration(pick.after or 0.0)
    snippet = f"lanes:\n  {name}:\n    hedge: {{after: {after}, max_share: {max_share:g}}}"
    return [*lines, f"recommended: {reason}.", snippet]
