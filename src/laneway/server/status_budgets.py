"""The status page's budgets: every key's and team's spend against its budget, this period.

One row per budget (a team's once, however many keys share it), its spend
read from the key ledger in one round trip (``KeyLedger.read_spend``) when
the page is asked for, never on a call's path. A budget spent to 80% is
worth a look (``warn``); one spent whole refuses calls (``down``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from laneway.policy.budget import BudgetCap, period_name
from laneway.server.key_terms import KeyTerms, SpentBefore
from laneway.state.keys.ledger import KeyLedger, key_owner

if TYPE_CHECKING:
    from laneway.server.stored_keys import StoredKeys

WARN_AT = 0.8
"""A budget spent this far is worth a look."""


@dataclass(slots=True)
class _Budget:
    cap: BudgetCap
    carried: float = 0.0
    keys: set[str] = field(default_factory=set)


def budget_rows(
    caps: dict[str, _Budget], spend: dict[str, float], wall: float
) -> list[dict[str, Any]]:
    """One row per budget, the most spent first."""
    rows: list[tuple[float, dict[str, Any]]] = []
    for name, budget in caps.items():
        cap = budget.cap
        spent = spend.get(name, 0.0) + budget.carried
        share = spent / cap.usd
        kind, _, owner = cap.owner.partition(":")
        row = {
            "owner": kind,
            "name": owner,
            "keys": sorted(budget.keys),
            "period": cap.period,
            "period_name": period_name(cap.period, wall),
            "budget_usd": cap.usd,
            "spent_usd": round(spent, 9),
            "share": round(share, 4),
            "verdict": "down" if share >= 1 else "warn" if share >= WARN_AT else "ok",
        }
        rows.append((share, row))
    rows.sort(key=lambda pair: (-pair[0], pair[1]["owner"], pair[1]["name"]))
    return [row for _, row in rows]


class BudgetBoard:
    """The budgets of the config's keys and of the stored keys and their teams, with their
    spend as ``ledger`` counts it."""

    def __init__(
        self,
        ledger: KeyLedger,
        config_keys: Iterable[KeyTerms],
        stored: StoredKeys | None = None,
    ) -> None:
        self.ledger = ledger
        self.config_keys = [terms for terms in config_keys if terms.budgets]
        self.stored = stored

    async def rows(self, wall: float) -> list[dict[str, Any]]:
        """Every budget's row now (an empty list when no key has a budget)."""
        keys: list[tuple[KeyTerms, SpentBefore | None]] = [(t, None) for t in self.config_keys]
        if self.stored is not None:
            keys += [(c.limits, c.spent_before) for c in self.stored.budgeted if c.limits]
        caps: dict[str, _Budget] = {}
        for terms, before in keys:
            own = key_owner(terms.name)
            for cap in terms.budgets:
                name = f"{cap.owner}:{period_name(cap.period, wall)}"
                budget = caps.setdefault(name, _Budget(cap))
                budget.keys.add(terms.name)
                if before is not None and cap.owner == own:
                    budget.carried = before.counted(wall, (cap.period,))[0]
                elif cap.owner != own and terms.team_spent is not None:
                    budget.carried = terms.team_spent.counted(wall, (cap.period,))[0]
        if not caps:
            return []
        return budget_rows(caps, await self.ledger.read_spend(list(caps)), wall)
