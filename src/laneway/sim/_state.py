"""Mutable per-app state: hit log, fail_first/fail_after counters, flaky RNGs and rate buckets.

Everything is keyed by the exact spec string (or bucket name), so tests sharing one
sim stay apart by using distinct specs, e.g. via an `id=` token. Methods take `now`
(monotonic seconds) from the caller, which keeps them deterministic to test.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

RATE_WINDOW_SECONDS = 60.0
"""Length of the rolling window behind the `rpm` token."""

MAX_HIT_TIMES = 10_000
"""Hit times kept per spec; long benchmarks would otherwise grow without bound."""


@dataclass(slots=True)
class _Hits:
    first: float
    """Seconds from the start to the first hit (kept when `times` drops old ones)."""
    count: int = 0
    times: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_HIT_TIMES))


class SimState:
    """Counters that outlive a request; `reset()` returns them to a fresh start."""

    def __init__(self, started_at: float) -> None:
        self.started_at = started_at
        self._hits: dict[str, _Hits] = {}
        self._attempts: dict[str, int] = {}
        self._rngs: dict[str, random.Random] = {}
        self._buckets: dict[str, deque[float]] = {}

    def reset(self) -> None:
        """Forget hits, counters, RNGs and buckets; the start time (and flap phase) stays."""
        self._hits.clear()
        self._attempts.clear()
        self._rngs.clear()
        self._buckets.clear()

    def record_hit(self, spec: str, now: float) -> None:
        """Log that a request for `spec` reached an endpoint."""
        at = now - self.started_at
        hits = self._hits.get(spec)
        if hits is None:
            hits = self._hits[spec] = _Hits(first=at)
        hits.count += 1
        hits.times.append(at)

    def hits(self, spec: str | None = None) -> dict[str, Any]:
        """Report hits for every spec, or only the entry for `spec` when one is named."""
        if spec is not None:
            return self._hits_entry(self._hits.get(spec, _Hits(first=0.0)))
        return {name: self._hits_entry(hits) for name, hits in self._hits.items()}

    @staticmethod
    def _hits_entry(hits: _Hits) -> dict[str, Any]:
        return {"count": hits.count, "times": list(hits.times)}

    def since_first_hit(self, spec: str, now: float) -> float:
        """Seconds from the spec's first hit to `now` (0 before any hit)."""
        hits = self._hits.get(spec)
        return 0.0 if hits is None else now - self.started_at - hits.first

    def next_attempt(self, spec: str) -> int:
        """Count one more attempt for `spec` and return its 1-based ordinal."""
        attempt = self._attempts.get(spec, 0) + 1
        self._attempts[spec] = attempt
        return attempt

    def rng(self, spec: str, seed: int) -> random.Random:
        """Return the spec's own RNG, so one spec's draws never shift another's."""
        rng = self._rngs.get(spec)
        if rng is None:
            rng = self._rngs[spec] = random.Random(seed)
        return rng

    def take_rate_slot(self, bucket: str, rpm: int, now: float) -> int | None:
        """Admit a request into `bucket`, or return whole seconds until a slot frees up.

        Specs sharing a bucket may name different `rpm`s, so the slot that frees next
        is the one `rpm` places from the newest, not always the oldest.
        """
        accepted = self._buckets.setdefault(bucket, deque())
        while accepted and accepted[0] <= now - RATE_WINDOW_SECONDS:
            accepted.popleft()
        if len(accepted) >= rpm:
            frees_next = accepted[len(accepted) - rpm]
            return max(1, math.ceil(frees_next + RATE_WINDOW_SECONDS - now))
        accepted.append(now)
        return None
