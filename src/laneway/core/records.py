"""The record every call leaves, whatever its outcome.

The engine fills one ``CallRecord`` per call and hands it to each
``CallObserver`` once. Observers must not block: the request path only enqueues.
laneway's own observers (metrics, access log, telemetry, traces) are
``BatchObserver``s behind one ``CallObserver`` (``engine.recording.RecordFeed``),
which hands them the records of each turn of the event loop together, after
the answers have gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol, runtime_checkable

from laneway.core.types import NO_USAGE, Attempt, Usage


@dataclass(frozen=True, slots=True)
class CallMeta:
    """Who asked, as far as the caller of the engine knows (the server fills it)."""

    request_id: str | None = None
    caller: str | None = None


NO_META = CallMeta()
"""The meta of a call whose caller said nothing of itself (a library call)."""


@dataclass(slots=True)
class CallRecord:
    """One finished call: identity, outcome, timing, tokens.

    Treat it as immutable once made (``priced`` aside: a memo). It is not a
    frozen dataclass because one is built on every request, and a frozen
    ``__init__`` (a ``setattr`` per field) costs several microseconds there.

    ``outcome`` is ``ok`` or ``error``; ``error`` names the error code
    (``deadline_exceeded``, ``upstream_error``...). ``usage`` fields stay
    ``None`` where unknown. ``ttfb`` is set for streams only.
    """

    time: float
    lane: str
    kind: str
    outcome: str
    latency: float
    attempts: tuple[Attempt, ...]
    meta: CallMeta = field(default_factory=CallMeta)
    source: str | None = None
    provider: str | None = None
    model: str | None = None
    error: str | None = None
    status: int | None = None
    usage: Usage = NO_USAGE
    ttfb: float | None = None
    queue_wait: float | None = None
    cache: str = "bypass"
    embedding_dim: int | None = None
    stream: bool = False
    malformed_events: int = 0
    priced: tuple[float | None, str] | None = field(default=None, compare=False, repr=False)
    """The pricer's answer, kept by the first reader that asked (``accounting.Pricer.cost``):
    the recorder, metrics, access log and telemetry writer all price the same record."""

    @property
    def pushbacks(self) -> int:
        """How many attempts ended in an honoured pushback."""
        return sum(1 for a in self.attempts if a.pushback)


class CallObserver(Protocol):
    """Receives every finished call. Must return at once (enqueue, never wait)."""

    def observe(self, record: CallRecord) -> None:
        """Take one record."""
        ...


@runtime_checkable
class BatchObserver(Protocol):
    """Receives finished calls a batch at a time, off the request path (``RecordFeed``)."""

    def observe_batch(self, records: Sequence[CallRecord]) -> None:
        """Take the records of calls that ended since the last batch, oldest first."""
        ...

    def follow(self, catch_up: Callable[[], None]) -> None:
        """Keep ``catch_up``, which hands over the records still waiting for their batch:
        an observer whose figures are read (metrics, a writer closing) calls it first."""
        ...


RecordPricer = Callable[[CallRecord], tuple[float | None, str]]
"""Prices a finished call: ``(usd or None, status)``; ``accounting.Pricer.cost`` fits.

The status is ``priced``, ``estimated`` (from locally estimated usage),
``cache_hit`` or ``not_billed`` (0: a failed call no upstream answered), or, with
``None``, ``unpriced`` or ``usage_unknown``.
"""

COST_DIGITS = 12
"""Decimal places of a reply's cost: a millionth of a millionth of a dollar."""
UNKNOWN_COST_REASONS = {"unpriced": "unpriced model", "usage_unknown": "usage unknown"}
"""Why a reply's ``cost`` is ``None``, by pricing status."""


def no_prices(record: CallRecord) -> tuple[float | None, str]:
    """The pricer of an engine given none: every call is unpriced (a cache hit costs 0)."""
    return (0.0, "cache_hit") if record.cache == "hit" else (None, "unpriced")


def reply_cost(priced: tuple[float | None, str]) -> tuple[Decimal | None, str | None]:
    """A priced call as a reply's ``(cost, cost_unknown)``: USD as a ``Decimal``, or why not.

    The float is rounded to ``COST_DIGITS`` places and converted through its
    shortest ``repr``, so ``0.000021`` stays ``Decimal("0.000021")`` rather than
    the sum's float noise (``0.000021000000000000002``) or 50 binary digits.
    """
    usd, status = priced
    if usd is None:
        return None, UNKNOWN_COST_REASONS.get(status, status)
    return Decimal(repr(round(usd, COST_DIGITS))), None
