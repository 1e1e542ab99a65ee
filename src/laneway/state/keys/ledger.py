"""The key ledger's port: what a keyed call reserves, what it is told, and the ledger's methods.

A key's call reserves, before it is made, one request, an estimate of its
tokens, a concurrency slot and an estimate of its cost; it is refused
instead when any of the key's limits would be passed. Settling the call
puts its real tokens and cost in place of the estimates (``None`` keeps the
estimate: an unknown cost is never counted as zero) and frees its slot.

Spend is counted in *counters*, one per owner (a key, or a team for its keys
together) and budget period instance (``laneway.policy.budget``): a keyed
call always adds its cost to its key's UTC day and month, and to the period
of each budget it is under (the key's week or total, its team's). Times are
wall-clock seconds: replicas share that timeline, and budget periods are
calendar periods. ``laneway.state.keys.memory`` keeps one process's figures;
``laneway.state.keys.redis_ledger`` shares them through Redis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from laneway.policy.budget import SECONDS_A_DAY, BudgetCap, period_name

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
    budgets: tuple[BudgetCap, ...] = ()
    """The caps the call is held to: the key's own (owner ``key_owner(key)``) and its
    team's (``team_owner(team)``), checked in this order."""


@dataclass(frozen=True, slots=True)
class KeyRefusal:
    """The limit that refused a call, its value, and the seconds until it may fit."""

    limit: str
    """``max_concurrency``, ``rpm``, ``tpm``, or a budget's (``BUDGET_LIMITS``)."""
    cap: float
    seconds: float
    spent: float | None = None
    """USD counted in the budget's period (reservations included), for budget refusals."""
    team: str | None = None
    """The team whose budget refused the call (``None``: the key's own limit)."""


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
"""USD counted, by counter name (``key:<key>:<period name>``, ``team:<team>:<period name>``)."""

BUDGET_LIMITS = {
    "day": "daily_budget",
    "week": "weekly_budget",
    "month": "monthly_budget",
    "total": "total_budget",
}
"""The limit a budget of each period is named as in refusals."""

ALWAYS_COUNTED = ("day", "month")
"""Periods every keyed call's cost is counted in for its key, budget or not."""


def key_owner(key: str) -> str:
    """The budget owner a key's own budgets name."""
    return f"key:{key}"


def team_owner(team: str) -> str:
    """The budget owner a team's budget (shared by its keys) names."""
    return f"team:{team}"


@dataclass(frozen=True, slots=True)
class Counter:
    """One spend counter a call adds its cost to, and the budget that caps it, if any."""

    name: str
    period: str
    cap: BudgetCap | None


def counters(ask: KeyAsk, wall: float) -> tuple[Counter, ...]:
    """The counters a call of ``ask`` made at ``wall`` adds its cost to, capped ones in the
    order of ``ask.budgets``."""
    return _counters(ask.key, ask.budgets, int(wall // SECONDS_A_DAY))


@lru_cache(maxsize=4096)
def _counters(key: str, budgets: tuple[BudgetCap, ...], day: int) -> tuple[Counter, ...]:
    """``counters`` for a day (every period instance is one for a whole UTC day): a keyed
    call asks on every reservation, and the names are built once a day per key."""
    wall = day * SECONDS_A_DAY
    own = key_owner(key)
    found: dict[str, Counter] = {}
    for budget in budgets:
        name = f"{budget.owner}:{period_name(budget.period, wall)}"
        found.setdefault(name, Counter(name, budget.period, budget))
    for period in ALWAYS_COUNTED:
        name = f"{own}:{period_name(period, wall)}"
        found.setdefault(name, Counter(name, period, None))
    return tuple(found.values())


def refusal_of(over: BudgetCap, spent: float, seconds: float) -> KeyRefusal:
    """The refusal of a call that would pass ``over`` (``spent`` counted in its period)."""
    team = over.owner.removeprefix("team:") if over.owner.startswith("team:") else None
    return KeyRefusal(BUDGET_LIMITS[over.period], over.usd, seconds, spent, team)


@dataclass(slots=True)
class LocalCall:
    """A call one replica granted on its own while Redis was away, to replay into it.

    ``tokens`` and ``usd`` start as the reservation's and become the call's
    real figures when it settles; ``running`` until then.
    """

    ask: KeyAsk
    at: float
    counters: tuple[str, ...]
    """The names of the spend counters the call was counted in (``Counter.name``)."""
    tokens: int
    usd: float
    running: bool = True


class KeyLedger(Protocol):
    """Keeps every key's windows, slots and spend; each method is atomic."""

    async def reserve(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """Take ``ask`` whole (and say how full its window is), or nothing and say which
        limit refused it."""
        ...

    async def settle(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> Spend:
        """End a reserved call: its real tokens and cost (``None`` keeps the estimate).

        Returns the call's counters as settling left them (empty: it held none, or the
        figures are not known here), for budget alerts.
        """
        ...

    async def read_spend(self, names: Iterable[str]) -> Spend:
        """USD counted in each of the counters ``names`` (0 for one never counted); for the
        status page, never on a call's path."""
        ...

    async def claim(self, name: str, ttl: float) -> bool:
        """True the first time ``name`` is claimed within ``ttl`` seconds, on any replica
        sharing this ledger (a budget alert is sent once, by the replica that claims it)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
