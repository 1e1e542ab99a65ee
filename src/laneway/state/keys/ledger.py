"""The key ledger's port: what a keyed call reserves, what it is told, and the ledger's methods.

A key's call reserves, before it is made, one request, an estimate of its
tokens, a concurrency slot and an estimate of its cost; it is refused
instead when any of the key's limits would be passed. Settling the call
puts its real tokens and cost in place of the estimates (``None`` keeps the
estimate: an unknown cost is never counted as zero) and frees its slot.

Spend is counted per budget period (``laneway.policy.budget``). Times are
wall-clock seconds: replicas share that timeline, and budget periods are
calendar periods. ``laneway.state.keys.memory`` keeps one process's figures;
``laneway.state.keys.redis_ledger`` shares them through Redis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

SLOT_LEASE = 900.0
"""Seconds a concurrency slot is held when its call is never settled (a replica died)."""

PRUNE_RUNNING_AT = 1024
"""Slots held by a key without ``max_concurrency`` before expired leases are dropped."""

CONCURRENCY_WAIT = 1.0
"""The ``Retry-After`` of a refusal for ``max_concurrency``: slots free when calls end."""


@dataclass(frozen=True, slots=True)
class KeyAsk:
    """One call's reservation against a key's limits (``None``: no such limit)."""

    key: str
    ticket: str
    tokens: int = 0
    usd: float = 0.0
    rpm: int | None = None
    tpm: int | None = None
    window: float = 60.0
    max_concurrency: int | None = None
    daily: float | None = None
    monthly: float | None = None


@dataclass(frozen=True, slots=True)
class KeyRefusal:
    """The limit that refused a call, its value, and the seconds until it may fit."""

    limit: str
    """``max_concurrency``, ``rpm``, ``tpm``, ``daily_budget`` or ``monthly_budget``."""
    cap: float
    seconds: float
    spent: float | None = None
    """USD counted in the budget's period (reservations included), for budget refusals."""


@dataclass(frozen=True, slots=True)
class KeyGrant:
    """A reserved call, and the key's request window as the reservation left it.

    ``requests`` and ``tokens`` are what the window holds, this call
    included; ``frees_in`` the seconds until its oldest reservation leaves it.
    All zero when the key has neither ``rpm`` nor ``tpm``. The server turns
    them into ``X-RateLimit-*`` headers at no extra cost.
    """

    requests: int = 0
    tokens: int = 0
    frees_in: float = 0.0


Spend = dict[str, float]
"""USD counted for a key per period, by period name (a UTC day or month)."""


@dataclass(slots=True)
class LocalCall:
    """A call one replica granted on its own while Redis was away, to replay into it.

    ``tokens`` and ``usd`` start as the reservation's and become the call's
    real figures when it settles; ``running`` until then.
    """

    ask: KeyAsk
    at: float
    day: str
    month: str
    tokens: int
    usd: float
    running: bool = True


class KeyLedger(Protocol):
    """Keeps every key's windows, slots and spend; each method is atomic."""

    async def reserve(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """Take ``ask`` whole (and say how full its window is), or nothing and say which
        limit refused it."""
        ...

    async def settle(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> None:
        """End a reserved call: its real tokens and cost (``None`` keeps the estimate)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
