"""The state port: the values admission exchanges with a store, and the store's methods.

Times in these values are on the caller's monotonic clock (``Clock.now``);
a store that keeps another timeline (Redis keeps wall time, shared between
hosts) converts at its boundary. Waits are durations in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from laneway.core.outcomes import SourceRecord
from laneway.core.values import value
from laneway.state.window import Entry

LOG_SIZE = 32
"""Outcomes kept per source: enough for the health score and for ``breaker.failures``
(which the config caps at this size)."""

PROBE = "probe"
QUOTA = "quota"


@value
class Ask:
    """One source an admission would take, in order of preference.

    ``ticket`` names the reservation; ``tokens`` is its size. ``rpm`` and
    ``tpm`` (``None``: unlimited) apply over ``window`` seconds. ``probe`` > 0
    also claims the source's half-open probe lease for that many seconds.
    ``quota`` names the window the reservation goes in when it is not the
    source's own (a quota group several sources share).
    """

    source: str
    ticket: str
    tokens: int = 0
    rpm: int | None = None
    tpm: int | None = None
    window: float = 60.0
    probe: float = 0.0
    quota: str = ""

    @property
    def quota_limited(self) -> bool:
        """Whether the ask reserves in a quota window (an ``rpm`` or a ``tpm``)."""
        return self.rpm is not None or self.tpm is not None

    @property
    def quota_source(self) -> str:
        """The name whose quota window holds this ask's reservation."""
        return self.quota or self.source


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an ``Ask`` was not granted: ``quota`` or ``probe``, and for how long."""

    source: str
    seconds: float
    reason: str


@value
class Admission:
    """A store's answer to ``admit``: the granted ask (if any), the refusals before
    it, and fresh records of every source of the lane."""

    granted: Ask | None
    refusals: tuple[Refusal, ...]
    records: Mapping[str, SourceRecord]


@dataclass(frozen=True, slots=True)
class QuotaUse:
    """What a quota window holds now: reservations (requests) and their tokens."""

    requests: int = 0
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class Peek:
    """A store's answer to ``peek``: the sources' records and their quota windows' use."""

    records: Mapping[str, SourceRecord]
    quotas: Mapping[str, QuotaUse]


@dataclass(frozen=True, slots=True)
class SourceDump:
    """A source's local state, replayed into a shared store when it comes back."""

    lane: str
    source: str
    window: float
    entries: tuple[Entry, ...]
    record: SourceRecord


class SourceStore(Protocol):
    """Keeps quota windows, outcome logs and probe leases; every method is atomic."""

    async def admit(self, lane: str, sources: Sequence[str], asks: Sequence[Ask]) -> Admission:
        """Grant the first ask that fits (quota, probe lease), reserving it.

        ``sources`` are all the lane's sources, whose records come back.
        """
        ...

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        """End a granted ask: set its tokens (``None`` keeps the reservation), log
        ``code`` (``None`` logs nothing), free its probe lease."""
        ...

    async def release(self, lane: str, ask: Ask) -> None:
        """Undo a granted ask whose attempt was cancelled: reservation and lease."""
        ...

    async def peek(
        self, lane: str, sources: Sequence[str], quotas: Sequence[tuple[str, float]]
    ) -> Peek:
        """Read without changing anything: the records of ``sources``, and the use of
        each quota window in ``quotas`` (its name, and its width in seconds).

        For the status page, never on a call's path.
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
