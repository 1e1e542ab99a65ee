"""Turning finished calls into ``CallRecord``s for the observers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laneway.core.clock import Clock
from laneway.core.errors import CallFailed, LaneNotReady
from laneway.core.records import CallMeta, CallObserver, CallRecord
from laneway.engine.lane import Lane


@dataclass(slots=True)
class CallClock:
    """When a call started, in wall and monotonic time."""

    wall: float
    mono: float


class Recorder:
    """Fans finished calls out to the observers (which only enqueue)."""

    def __init__(self, observers: Sequence[CallObserver], clock: Clock) -> None:
        self.observers = list(observers)
        self.clock = clock

    def start(self) -> CallClock:
        """Mark a call's start."""
        return CallClock(self.clock.wall(), self.clock.now())

    def ok(self, lane: Lane, started: CallClock, meta: CallMeta | None, **fields: Any) -> None:
        """Record a successful call; ``fields`` are ``CallRecord`` fields."""
        if self.observers:
            self._emit(lane, started, meta, outcome="ok", **fields)

    def failed(
        self,
        lane: Lane,
        started: CallClock,
        meta: CallMeta | None,
        error: BaseException,
        **fields: Any,
    ) -> None:
        """Record a call that ended in ``error``, was cancelled by its caller, or was skipped
        because its lane cannot run (``LaneNotReady``)."""
        if not self.observers:
            return
        if isinstance(error, CallFailed):
            fields.setdefault("attempts", error.attempts)
            fields.setdefault("source", error.source)
            fields.setdefault("status", error.status)
            code = error.code
        elif isinstance(error, LaneNotReady):
            code = error.code
        else:
            code = "cancelled"
        self._emit(lane, started, meta, outcome="error", error=code, **fields)

    def _emit(self, lane: Lane, started: CallClock, meta: CallMeta | None, **fields: Any) -> None:
        fields.setdefault("attempts", ())
        source_name = fields.get("source")
        source = next((s for s in lane.sources if s.name == source_name), None)
        if source is not None:
            fields.setdefault("provider", source.config.provider)
            fields.setdefault("model", source.config.model)
        record = CallRecord(
            time=started.wall,
            lane=lane.name,
            kind=lane.kind,
            latency=self.clock.now() - started.mono,
            meta=meta or CallMeta(),
            **fields,
        )
        for observer in self.observers:
            observer.observe(record)

    def crashed(
        self, lane: str, kind: str, started: CallClock, meta: CallMeta, status: int = 500
    ) -> None:
        """Record a request that ended in an unexpected exception (a bug, not an outcome).

        The gateway's catch-all calls this, so even a crash leaves a telemetry
        row and a metric; ``lane`` is empty when the request never named one.
        """
        record = CallRecord(
            time=started.wall,
            lane=lane,
            kind=kind,
            outcome="error",
            latency=self.clock.now() - started.mono,
            attempts=(),
            meta=meta,
            error="internal_error",
            status=status,
        )
        for observer in self.observers:
            observer.observe(record)
