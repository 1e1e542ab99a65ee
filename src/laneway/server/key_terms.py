"""A key's terms: the limits and budgets the key ledger holds its calls to.

One form for both kinds of key: a key of laneway.yaml (``config_terms``) and
a stored key, whose budget may be one of its team's too (the team's budget
is shared by its keys: each call of any of them counts against it). Built
once per key (at load, or when the store is read), never per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from laneway.config.models import BudgetConfig, KeyConfig
from laneway.policy.budget import PERIODS, BudgetCap, period_name
from laneway.state.keys.ledger import BUDGET_LIMITS, KeyRefusal, key_owner

CONFIG_PERIODS = {"day": "daily", "week": "weekly", "month": "monthly", "total": "total"}
"""The ``budget:`` field of laneway.yaml for each period."""


@dataclass(frozen=True, slots=True)
class SpentBefore:
    """USD a stored key spent before laneway counted its calls (an imported LiteLLM key's
    spend so far), and when it came to laneway (``since``, wall time): it counts against
    each of the key's budgets in the budget period ``since`` falls in, and in no later one."""

    usd: float
    since: float

    def counted(
        self, wall: float, periods: tuple[str, ...] = ("day", "month")
    ) -> tuple[float, ...]:
        """The USD it adds to the key's spend of each of ``periods`` at ``wall``."""
        if self.usd <= 0:
            return tuple(0.0 for _ in periods)
        return tuple(
            self.usd if period_name(p, wall) == period_name(p, self.since) else 0.0 for p in periods
        )


@dataclass(frozen=True, slots=True)
class KeyTerms:
    """A key's limits (``None``: no such limit) and its budgets, its team's last."""

    name: str
    rpm: int | None = None
    tpm: int | None = None
    max_concurrency: int | None = None
    budgets: tuple[BudgetCap, ...] = ()
    team: str | None = None
    allow_unpriced: bool = False
    team_spent: SpentBefore | None = None
    """What the key's team spent before laneway counted it (an imported LiteLLM team's spend),
    against the team's budget."""

    @property
    def limited(self) -> bool:
        """True when any limit or budget applies to the key's calls."""
        limits = (self.rpm, self.tpm, self.max_concurrency)
        return bool(self.budgets) or any(v is not None for v in limits)

    @property
    def budgeted(self) -> bool:
        """True when a budget (the key's or its team's) counts the key's spend."""
        return bool(self.budgets)

    @property
    def own_budgets(self) -> tuple[BudgetCap, ...]:
        """The key's own budgets (its team's left out)."""
        own = key_owner(self.name)
        return tuple(b for b in self.budgets if b.owner == own)

    @property
    def team_budgets(self) -> tuple[BudgetCap, ...]:
        """The key's team's budgets, shared by the team's keys."""
        own = key_owner(self.name)
        return tuple(b for b in self.budgets if b.owner != own)


def config_budgets(owner: str, budget: BudgetConfig | None) -> tuple[BudgetCap, ...]:
    """The caps of a laneway.yaml ``budget:`` block, shortest period first."""
    if budget is None:
        return ()
    caps = ((p, getattr(budget, CONFIG_PERIODS[p])) for p in PERIODS)
    return tuple(BudgetCap(owner, p, usd) for p, usd in caps if usd is not None)


def config_terms(key: KeyConfig) -> KeyTerms:
    """The terms of a key of laneway.yaml."""
    return KeyTerms(
        name=key.name,
        rpm=key.rpm,
        tpm=key.tpm,
        max_concurrency=key.max_concurrency,
        budgets=config_budgets(key_owner(key.name), key.budget),
        allow_unpriced=key.allow_unpriced,
    )


@dataclass(frozen=True, slots=True)
class CarriedSpend:
    """Spend from before laneway that counts at one wall time, by budget period: the key's
    own (``SpentBefore`` of the caller) and its team's (``KeyTerms.team_spent``)."""

    own: Mapping[str, float]
    team: Mapping[str, float]

    def lowered(self, terms: KeyTerms) -> tuple[BudgetCap, ...]:
        """``terms``'s budgets, each lowered by what its owner carried into its period."""
        own = set(terms.own_budgets)
        return tuple(
            replace(b, usd=b.usd - (self.own if b in own else self.team).get(b.period, 0.0))
            for b in terms.budgets
        )

    def raised(self, refusal: KeyRefusal) -> KeyRefusal:
        """A refusal of a lowered cap as its owner's own cap and whole spend."""
        return raised(refusal, self.own if refusal.team is None else self.team)


def carried_spend(terms: KeyTerms, spent: SpentBefore | None, wall: float) -> CarriedSpend | None:
    """What the key's (``spent``) and its team's spend from before laneway add at ``wall``
    to their budgets' periods; ``None`` when neither adds anything."""
    own = _by_period(spent, terms.own_budgets, wall)
    team = _by_period(terms.team_spent, terms.team_budgets, wall)
    return CarriedSpend(own, team) if any(own.values()) or any(team.values()) else None


def _by_period(
    spent: SpentBefore | None, budgets: tuple[BudgetCap, ...], wall: float
) -> dict[str, float]:
    if spent is None or not budgets:
        return {}
    counted = spent.counted(wall, tuple(b.period for b in budgets))
    return {b.period: usd for b, usd in zip(budgets, counted, strict=True)}


def raised(refusal: KeyRefusal, carried: Mapping[str, float]) -> KeyRefusal:
    """A refusal of a lowered cap as the owner's own cap and whole spend."""
    period = next((p for p, limit in BUDGET_LIMITS.items() if limit == refusal.limit), None)
    added = 0.0 if period is None else carried.get(period, 0.0)
    if not added:
        return refusal
    spent = None if refusal.spent is None else refusal.spent + added
    return replace(refusal, cap=refusal.cap + added, spent=spent)
