"""The figures of one scenario run, from call records and the upstream's hits.

Ratios are per success, so a client that fails fast does not look cheaper:
``throttled_per_ok`` is upstream 429s per successful call, ``attempts_per_ok``
upstream requests per successful call. Latencies are over every call,
failed ones included (a call that ends at its deadline is slow, not absent).
An overrun is a call that ended more than ``OVERRUN_SLACK`` after its deadline.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from laneway.chaos.upstream import RATE_WINDOW, Hit

OVERRUN_SLACK = 0.05


@dataclass(frozen=True, slots=True)
class SeenCall:
    """One call as the caller saw it: start and end (sim clock), and how it ended."""

    start: float
    end: float
    ok: bool
    error: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SeenCall:
        """Read a record written by another process (``dataclasses.asdict`` form)."""
        error = data.get("error")
        return cls(float(data["start"]), float(data["end"]), bool(data["ok"]), error)


@dataclass(frozen=True, slots=True)
class ScenarioTally:
    """What a scenario run measured.

    ``worst_overrun`` is how far the slowest call ended past its deadline
    (negative when every call ended in time).
    """

    calls: int
    ok: int
    hits: int
    throttled: int
    p50: float
    p99: float
    overruns: int
    worst_overrun: float
    late_throttled_share: float
    ok_per_minute: float
    max_per_window: int
    answered: tuple[bool, ...]
    failures: tuple[tuple[str, int], ...] = ()
    """Failed calls by error label, most frequent first."""

    @property
    def success_rate(self) -> float:
        """Successful calls over calls made."""
        return self.ok / self.calls if self.calls else 0.0

    @property
    def throttled_per_ok(self) -> float:
        """Upstream 429s per successful call (infinite with no success)."""
        return _per(self.throttled, self.ok)

    @property
    def attempts_per_ok(self) -> float:
        """Upstream requests per successful call (infinite with no success)."""
        return _per(self.hits, self.ok)


def tally_scenario(
    calls: Sequence[SeenCall],
    upstream: Sequence[Hit],
    *,
    deadline: float,
    offered_for: float,
    warmup: float = 0.0,
) -> ScenarioTally:
    """The figures of one run.

    ``offered_for`` is how long calls were offered (successes per minute
    count upstream 200s within it); ``warmup`` how long from the start the
    429 share ignores.
    """
    ordered = sorted(calls, key=lambda c: c.start)
    start = ordered[0].start if ordered else 0.0
    durations = [c.end - c.start for c in ordered]
    late = [h for h in upstream if h.at - start >= warmup]
    served = sum(1 for h in upstream if h.status == 200 and h.at - start < offered_for)
    return ScenarioTally(
        calls=len(ordered),
        ok=sum(c.ok for c in ordered),
        hits=len(upstream),
        throttled=sum(h.status == 429 for h in upstream),
        p50=interpolated_percentile(durations, 50),
        p99=interpolated_percentile(durations, 99),
        overruns=sum(d > deadline + OVERRUN_SLACK for d in durations),
        worst_overrun=max([d - deadline for d in durations], default=0.0),
        late_throttled_share=_share(sum(h.status == 429 for h in late), len(late)),
        ok_per_minute=served / (offered_for / 60.0) if offered_for > 0 else 0.0,
        max_per_window=max_in_window([h.at for h in upstream], RATE_WINDOW),
        answered=tuple(c.ok for c in ordered),
        failures=tuple(Counter(c.error or "?" for c in ordered if not c.ok).most_common()),
    )


def interpolated_percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (numpy's default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def max_in_window(times: Sequence[float], window: float) -> int:
    """The most ``times`` in any half-open interval ``(t - window, t]``, as the sim counts."""
    ordered = sorted(times)
    best = 0
    first = 0
    for last, at in enumerate(ordered):
        while ordered[first] <= at - window:
            first += 1
        best = max(best, last - first + 1)
    return best


def _per(count: int, ok: int) -> float:
    return count / ok if ok else math.inf


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0
