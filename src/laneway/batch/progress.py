"""Where a job stands, and its two renderings: a line for people, JSON for machines."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Progress:
    """A snapshot of a running job.

    ``rate`` counts only the items this run finished (resumed ones came from
    the checkpoint); ``eta`` is ``None`` until there is a rate. ``tokens`` and
    ``cost_usd`` are known figures only: ``unknown_calls`` counts the calls
    whose usage is unknown and ``unpriced_calls`` those with no price.
    """

    done: int
    failed: int
    total: int
    resumed: int
    elapsed: float
    rate: float
    eta: float | None
    tokens: int
    unknown_calls: int
    cost_usd: float
    unpriced_calls: int
    concurrency: int
    in_flight: int
    final: bool = False

    def as_json(self) -> dict[str, Any]:
        """The snapshot as one JSON object (``--progress json``)."""
        timed = ("elapsed", "rate", "eta")
        fields = asdict(self)
        return {k: round(v, 3) if k in timed and v is not None else v for k, v in fields.items()}

    def line(self) -> str:
        """One line: done/total, rate, ETA, tokens, cost, concurrency, errors."""
        share = 100.0 * (self.done + self.failed) / self.total if self.total else 100.0
        eta = "-" if self.eta is None else clock_time(self.eta)
        tokens = f"{self.tokens} tok" + (
            f" (+{self.unknown_calls} calls unknown)" if self.unknown_calls else ""
        )
        cost = f"${self.cost_usd:.4f}" + (
            f" (+{self.unpriced_calls} unpriced)" if self.unpriced_calls else ""
        )
        return (
            f"{self.done + self.failed}/{self.total} ({share:.1f}%) {self.rate:.1f} items/s "
            f"ETA {eta} | {tokens} | {cost} | concurrency {self.in_flight}/{self.concurrency} "
            f"| errors {self.failed}"
        )


def clock_time(seconds: float) -> str:
    """``1h02m03s``, ``4m05s`` or ``6s``: whole seconds, rounded up."""
    whole = math.ceil(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
