"""``SourceAdmission``: the one place that picks the source for an attempt."""

from __future__ import annotations

from dataclasses import dataclass, field

from laneway.engine.lane import Lane, Source


@dataclass(slots=True)
class CallSources:
    """Per-call memory of sources: when each last failed, and which are excluded.

    Local to one call, never shared: one call's failures must not steer another's.
    """

    failed_at: dict[str, float] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)


class SourceAdmission:
    """Picks a runnable source for each attempt of a call.

    Sources are tried in priority order; a source that failed in this call
    yields to one that has not; when all have failed, the least recently
    failed one is tried again. A single-source lane therefore always gets its
    source: nothing here can take the last source out of rotation.
    """

    def pick(self, lane: Lane, call: CallSources) -> Source | None:
        """The source for the next attempt, or ``None`` when every one is excluded."""
        candidates = [s for s in lane.sources if s.ready and s.name not in call.excluded]
        if not candidates:
            return None
        fresh = [s for s in candidates if s.name not in call.failed_at]
        if fresh:
            return fresh[0]
        return min(candidates, key=lambda s: call.failed_at[s.name])

    def exclude_smaller_windows(self, lane: Lane, call: CallSources, failed: Source) -> None:
        """After ``context_length_exceeded``, drop the source and any with no larger window."""
        call.excluded.add(failed.name)
        window = failed.config.context_window
        if window is None:
            return
        for source in lane.sources:
            other = source.config.context_window
            if other is not None and other <= window:
                call.excluded.add(source.name)
