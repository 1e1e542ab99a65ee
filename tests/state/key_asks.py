"""Key asks as the ledger tests write them: a key's own daily and monthly budgets by name."""

from __future__ import annotations

from typing import Any

from laneway.policy.budget import BudgetCap
from laneway.state.keys.ledger import KeyAsk, key_owner


def key_ask(
    key: str,
    ticket: str,
    *,
    daily: float | None = None,
    monthly: float | None = None,
    **limits: Any,
) -> KeyAsk:
    """A ``KeyAsk`` of ``key`` held to ``daily`` and ``monthly`` USD budgets of its own."""
    caps = (("day", daily), ("month", monthly))
    budgets = tuple(BudgetCap(key_owner(key), p, usd) for p, usd in caps if usd is not None)
    return KeyAsk(key, ticket, budgets=budgets, **limits)
