"""Accounting: what a call cost, and what it used when the upstream did not say.

An adapter-layer package: it depends on ``laneway.core`` only (never on
``laneway.config``, ``policy`` or ``engine``). Config objects reach it by
shape (``LaneSpec``), so the composition root passes ``config.lanes`` as is.

Unknown is never zero: a cost is ``None`` with a status (``unpriced``,
``usage_unknown``) whenever usage or price is missing, and estimated usage
is marked ``estimated`` wherever it goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.estimate import chat_usage_or_estimate, embed_usage_or_estimate
from laneway.core.lazy import lazy_attributes
from laneway.core.messages import estimate_tokens

if TYPE_CHECKING:
    from laneway.accounting.cost import Cost, CostStatus, cost_of
    from laneway.accounting.pricer import LaneSpec, PricedSource, Pricer
    from laneway.accounting.rates import Rate, Tiered

_LAZY = {
    "Cost": "laneway.accounting.cost",
    "CostStatus": "laneway.accounting.cost",
    "cost_of": "laneway.accounting.cost",
    "LaneSpec": "laneway.accounting.pricer",
    "Pricer": "laneway.accounting.pricer",
    "PricedSource": "laneway.accounting.pricer",
    "Rate": "laneway.accounting.rates",
    "Tiered": "laneway.accounting.rates",
}

__all__ = [
    "Cost",
    "CostStatus",
    "LaneSpec",
    "PricedSource",
    "Pricer",
    "Rate",
    "Tiered",
    "chat_usage_or_estimate",
    "cost_of",
    "embed_usage_or_estimate",
    "estimate_tokens",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Load prices on first use: the genai-prices catalogue is the heaviest import here."""
