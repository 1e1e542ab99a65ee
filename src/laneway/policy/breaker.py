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

from dataclasses import dataclass

from laneway.core.outcomes import LogSummary
from laneway.policy.waits import ADMIT, PROBE, Admit, Probe, Wait

BREAKER_OPEN = "breaker"


@dataclass(frozen=True, slots=True)
class BreakerLimits:
    """When a source's breaker opens, and for how long."""

    failures: int = 5
    window: float = 30.0
    cooldown: float = 10.0

    def gate(self, log: LogSummary, now: float) -> Admit | Probe | Wait:
        """Admit (closed), allow a probe (half-open), or wait out the cooldown (open).

        ``log`` is the source's summarised outcome log; the failures it lists do
        not depend on the half-life it was summarised at.
        """
        reopens = self.reopens_at(log)
        if reopens is None:
            return ADMIT
        if now < reopens:
            return Wait(reopens - now, BREAKER_OPEN)
        return PROBE

    def reopens_at(self, log: LogSummary) -> float | None:
        """When the open breaker turns half-open, or ``None`` when it is closed."""
        failures = log.failures
        if len(failures) < self.failures or not self._tripped(failures):
            return None
        return failures[-1] + self.cooldown

    def _tripped(self, failures: tuple[float, ...]) -> bool:
        span = self.failures - 1
        return any(
            failures[i + span] - failures[i] <= self.window for i in range(len(failures) - span)
        )
