"""The circuit breaker, read from a source's outcome log.

The breaker keeps no state of its own: whether it is open follows from the
log of recent outcomes, which the state store shares between replicas. That
makes every transition a pure function of ``(log, now)``, identical in every
process that reads the same log.

- **Closed** until ``failures`` breaker-counting failures, with no success
  between them, fall within ``window`` seconds.
- **Open** for ``cooldown`` after the latest such failure: every later failure
  (a failed probe, a panic attempt, a late in-flight attempt) re-arms it.
- **Half-open** after that: one probe may run; its success closes the breaker.

The breaker alone never takes the last source of a lane out of rotation:
``laneway.policy.selection`` tries the least recently failed source when every
breaker of the lane is open (panic mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from laneway.policy.health import HealthPolicy
from laneway.policy.outcome import LogSummary, Mark, summarize
from laneway.policy.waits import ADMIT, PROBE, Admit, Probe, Wait

BREAKER_OPEN = "breaker"
SUMMARY_HALF_LIFE = HealthPolicy().half_life


@dataclass(frozen=True, slots=True)
class BreakerLimits:
    """When a source's breaker opens, and for how long."""

    failures: int = 5
    window: float = 30.0
    cooldown: float = 10.0

    def gate(self, marks: Sequence[Mark], now: float) -> Admit | Probe | Wait:
        """Admit (closed), allow a probe (half-open), or wait out the cooldown (open)."""
        return self.gate_of(summarize(marks, SUMMARY_HALF_LIFE), now)

    def gate_of(self, log: LogSummary, now: float) -> Admit | Probe | Wait:
        """``gate`` for a log already summarised."""
        reopens = self._reopens_at(log.failures)
        if reopens is None:
            return ADMIT
        if now < reopens:
            return Wait(reopens - now, BREAKER_OPEN)
        return PROBE

    def reopens_at(self, marks: Sequence[Mark]) -> float | None:
        """When the open breaker turns half-open, or ``None`` when it is closed."""
        return self._reopens_at(summarize(marks, SUMMARY_HALF_LIFE).failures)

    def _reopens_at(self, failures: tuple[float, ...]) -> float | None:
        if len(failures) < self.failures or not self._tripped(failures):
            return None
        return failures[-1] + self.cooldown

    def _tripped(self, failures: tuple[float, ...]) -> bool:
        span = self.failures - 1
        return any(
            failures[i + span] - failures[i] <= self.window for i in range(len(failures) - span)
        )
