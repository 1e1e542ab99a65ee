"""Turning finished calls into ``CallRecord``s for the observers, and pricing them.

Every call kind (chat, OCR, embed, stream) records the same three steps:
``start`` when it begins, ``failures`` around the work that may end in a call
failure or a cancellation (recorded, then re-raised), ``ok`` when it ends with
an answer. ``ok`` returns the call's price for the reply, from the same record
the telemetry row and the metrics are made of.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import TracebackType
from typing import Any

from laneway.core.answers import LANE_NOT_READY_STATUS, sent_status
from laneway.core.clock import Clock
from laneway.core.errors import CallFailed, LaneNotReady
from laneway.core.records import (
    NO_META,
    CallMeta,
    CallObserver,
    CallRecord,
    RecordPricer,
    no_prices,
    reply_cost,
)
from laneway.core.types import UNJUDGED, Attempt
from laneway.engine.lane import Lane

Facts = Callable[[], dict[str, Any]]
"""``CallRecord`` fields known only when the call ends (a stream's attempts, usage...)."""
ReplyCost = tuple[Decimal | None, str | None]
"""A reply's ``(cost, cost_unknown)``."""
RACE_LOSER_COST = "includes a cancelled attempt's unknown cost"
"""A hedged call's ``cost_unknown``: its ``cost`` is the winner's, and the provider may bill the
cancelled loser, whose usage is unknown."""
ENDINGS = (CallFailed, asyncio.CancelledError, GeneratorExit)
"""How a call ends without an answer: it failed, or its caller cancelled or closed it."""


@dataclass(slots=True)
class CallClock:
    """When a call started, in wall and monotonic time."""

    wall: float
    mono: float


class Recorder:
    """Fans finished calls out to the observers (which only enqueue)."""

    def __init__(
        self, observers: Sequence[CallObserver], clock: Clock, price: RecordPricer = no_prices
    ) -> None:
        self.observers = list(observers)
        self.clock = clock
        self.price = price

    def start(self) -> CallClock:
        """Mark a call's start."""
        return CallClock(self.clock.wall(), self.clock.now())

    def failures(
        self, lane: Lane, started: CallClock, meta: CallMeta | None, facts: Facts | None = None
    ) -> Failures:
        """A ``with`` block that records the call as failed if it ends in one of ``ENDINGS``."""
        return Failures(self, lane, started, meta, facts)

    def ok(self, lane: Lane, started: CallClock, meta: CallMeta | None, **fields: Any) -> ReplyCost:
        """Record a successful call; ``fields`` are ``CallRecord`` fields. Returns its cost."""
        fields["outcome"] = "ok"
        cost = reply_cost(self.price(self._emit(lane, started, meta, fields)))
        if lane.hedging is not None and len(fields["attempts"]) > 1 and _raced(fields["attempts"]):
            return cost[0], RACE_LOSER_COST
        return cost

    def failed(
        self,
        lane: Lane,
        started: CallClock,
        meta: CallMeta | None,
        error: BaseException,
        **fields: Any,
    ) -> ReplyCost:
        """Record a call that ended in ``error``, was cancelled by its caller, or was skipped
        because its lane cannot run (``LaneNotReady``). Returns what it cost all the same
        (a stream broken after content was sent used tokens)."""
        if isinstance(error, CallFailed):
            fields.setdefault("attempts", error.attempts)
            fields.setdefault("source", error.source)
            fields.setdefault("status", sent_status(error))
            code = error.code
        elif isinstance(error, LaneNotReady):
            fields.setdefault("status", LANE_NOT_READY_STATUS)
            code = error.code
        else:
            code = "cancelled"
        fields["outcome"], fields["error"] = "error", code
        return reply_cost(self.price(self._emit(lane, started, meta, fields)))

    def _emit(
        self, lane: Lane, started: CallClock, meta: CallMeta | None, fields: dict[str, Any]
    ) -> CallRecord:
        """Make the record of ``fields`` and hand it to every observer.

        ``fields`` is the caller's own ``**fields`` dict, passed on as it is
        rather than packed again: this runs on every call.
        """
        fields.setdefault("attempts", ())
        source = lane.named.get(fields.get("source", ""))
        if source is not None:
            fields.setdefault("provider", source.config.provider)
            fields.setdefault("model", source.config.model)
        record = CallRecord(
            time=started.wall,
            lane=lane.name,
            kind=lane.config.kind,
            latency=self.clock.now() - started.mono,
            meta=meta or NO_META,
            **fields,
        )
        for observer in self.observers:
            observer.observe(record)
        return record

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


class Failures:
    """Records the call as failed when its block ends in one of ``ENDINGS``, then lets it go on.

    A class rather than a generator-based context manager: it runs on every call.
    """

    __slots__ = ("_facts", "_lane", "_meta", "_recorder", "_started", "cost")

    def __init__(
        self,
        recorder: Recorder,
        lane: Lane,
        started: CallClock,
        meta: CallMeta | None,
        facts: Facts | None,
    ) -> None:
        self._recorder = recorder
        self._lane = lane
        self._started = started
        self._meta = meta
        self._facts = facts
        self.cost: ReplyCost | None = None
        """The failed call's cost, once the block ended in one of ``ENDINGS``."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None and isinstance(error, ENDINGS):
            fields = self._facts() if self._facts is not None else {}
            self.cost = self._recorder.failed(
                self._lane, self._started, self._meta, error, **fields
            )


def _raced(attempts: Sequence[Attempt]) -> bool:
    """Whether a race was lost in ``attempts`` (it leaves two at least: loser and winner)."""
    return any(a.outcome in UNJUDGED for a in attempts)
