"""Accounting: what a call cost, and what it used when the upstream did not say.

An adapter-layer package: it depends on ``laneway.core`` only (never on
``laneway.config``, ``policy`` or ``engine``). Config objects reach it by
shape (``LaneSpec``), so the composition root passes ``config.lanes`` as is.

Unknown is never zero: a cost is ``None`` with a status (``unpriced``,
``usage_unknown``) whenever usage or price is missing, and estimated usage
is marked ``estimated`` wherever it goes.
"""

from laneway.accounting.cost import Cost, CostStatus, cost_of
from laneway.accounting.estimate import (
    chat_usage_or_estimate,
    embed_usage_or_estimate,
    estimate_tokens,
)
from laneway.accounting.pricer import LaneSpec, Pricer, SourceSpec
from laneway.accounting.rates import Rate, Tiered

__all__ = [
    "Cost",
    "CostStatus",
    "LaneSpec",
    "Pricer",
    "Rate",
    "SourceSpec",
    "Tiered",
    "chat_usage_or_estimate",
    "cost_of",
    "embed_usage_or_estimate",
    "estimate_tokens",
]
