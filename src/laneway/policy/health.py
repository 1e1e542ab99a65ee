"""A source's health: its recent success rate, weighted towards recent outcomes.

The score is a decayed average over the outcome log, starting from an
optimistic prior: a source with no history scores 1, each outcome's weight
halves every ``half_life`` seconds, so a source that failed long ago recovers
its credibility without having to be tried first.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from laneway.core.outcomes import LogSummary


class Tier(enum.IntEnum):
    """Selection order: credible sources first, then demoted, then the rest."""

    CREDIBLE = 0
    DEMOTED = 1
    NON_CREDIBLE = 2


@dataclass(frozen=True, slots=True)
class HealthPolicy:
    """How outcomes become a score in [0, 1] and the score a ``Tier``.

    With the default prior weight of 1, one recent failure scores 0.5 (still
    credible), two or three score 0.33 or 0.25 (demoted), four 0.2 (non-credible).
    """

    half_life: float = 60.0
    prior_weight: float = 1.0
    credible: float = 0.5
    demoted: float = 0.25

    def score(self, log: LogSummary, now: float) -> float:
        """The decayed success rate at ``now`` of a log summarised at ``half_life``."""
        if not log.weight:
            return 1.0
        decay = math.exp2(-max(now - log.newest, 0.0) / self.half_life)
        prior = self.prior_weight
        return (prior + decay * log.good) / (prior + decay * log.weight)

    def tier(self, score: float) -> Tier:
        """The tier a score falls in."""
        if score >= self.credible:
            return Tier.CREDIBLE
        if score >= self.demoted:
            return Tier.DEMOTED
        return Tier.NON_CREDIBLE
