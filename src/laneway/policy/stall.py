"""The stall verdict: stop waiting when the whole lane has stopped making progress.

Both conditions must hold: the call has lasted longer than ``after``, and no
attempt of the lane succeeded anywhere within the last ``after`` seconds. A
call queued behind a busy but working lane keeps waiting (up to its
deadline); a call queued behind a lane where nothing succeeds fails fast
with ``Stalled`` instead of sitting until its deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StallWatch:
    """``after`` is ``stall_after`` in seconds; ``None`` disables the verdict."""

    after: float | None = None

    def due(self, call_started: float, last_progress: float | None) -> float:
        """The instant the call counts as stalled unless the lane progresses first."""
        if self.after is None:
            return math.inf
        since = call_started if last_progress is None else max(call_started, last_progress)
        return since + self.after

    def stalled(self, now: float, call_started: float, last_progress: float | None) -> bool:
        """True once the call has waited too long with no progress anywhere in the lane."""
        return now >= self.due(call_started, last_progress)
