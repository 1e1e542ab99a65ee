"""The record every call leaves, whatever its outcome.

The engine fills one ``CallRecord`` per call and hands it to a ``CallObserver``
(telemetry, metrics). Observers must not block: the request path only enqueues.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from laneway.core.types import NO_USAGE, Attempt, Usage


@dataclass(frozen=True, slots=True)
class CallMeta:
    """Who asked, as far as the caller of the engine knows (the server fills it)."""

    request_id: str | None = None
    caller: str | None = None


@dataclass(slots=True)
class CallRecord:
    """One finished call: identity, outcome, timing, tokens.

    Treat it as immutable once made. It is not a frozen dataclass because one
    is built on every request, and a frozen ``__init__`` (a ``setattr``
    per field) costs several microseconds there.

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

    @property
    def pushbacks(self) -> int:
        """How many attempts ended in an honoured pushback."""
        return sum(1 for a in self.attempts if a.pushback)


class CallObserver(Protocol):
    """Receives every finished call. Must return at once (enqueue, never wait)."""

    def observe(self, record: CallRecord) -> None:
        """Take one record."""
        ...
