"""What a job did: items, vectors checked, tokens and cost, each kind kept apart.

Tokens are counted per call in three heaps: reported by the provider,
estimated locally, and unknown (a call with no usage adds to the count of
unknown calls, never a 0 to the tokens). Cost likewise: priced, priced from
estimated usage, unpriced calls, calls of unknown usage, and cache hits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from laneway.batch.results import ItemResult
from laneway.policy.quota import used_tokens


@dataclass(slots=True)
class Tally:
    """Running totals over a job's results (resumed ones included)."""

    done: int = 0
    failed: int = 0
    vectors: int = 0
    lengths: set[int] = field(default_factory=set)
    provider_tokens: int = 0
    provider_calls: int = 0
    estimated_tokens: int = 0
    estimated_calls: int = 0
    unknown_calls: int = 0
    priced_usd: float = 0.0
    priced_calls: int = 0
    estimated_usd: float = 0.0
    estimated_usd_calls: int = 0
    unpriced_calls: int = 0
    usage_unknown_calls: int = 0
    cache_hits: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, result: ItemResult) -> None:
        """Count one result."""
        if result.error is not None:
            self.failed += 1
            self.errors[result.error.code] = self.errors.get(result.error.code, 0) + 1
            return
        self.done += 1
        if isinstance(result.output, list):
            self.vectors += 1
            self.lengths.add(len(result.output))
        if result.usage is not None:
            self._add_usage(result)
        if result.cost is not None:
            self._add_cost(result)

    def _add_usage(self, result: ItemResult) -> None:
        usage = result.usage
        tokens = used_tokens(usage) if usage is not None else None
        if usage is None or tokens is None:
            self.unknown_calls += 1
        elif usage.source == "estimated":
            self.estimated_tokens += tokens
            self.estimated_calls += 1
        else:
            self.provider_tokens += tokens
            self.provider_calls += 1

    def _add_cost(self, result: ItemResult) -> None:
        cost = result.cost
        assert cost is not None
        if cost.status == "cache_hit":
            self.cache_hits += 1
        elif cost.status == "usage_unknown":
            self.usage_unknown_calls += 1
        elif cost.usd is None:
            self.unpriced_calls += 1
        elif cost.status == "estimated":
            self.estimated_usd += cost.usd
            self.estimated_usd_calls += 1
        else:
            self.priced_usd += cost.usd
            self.priced_calls += 1

    @property
    def finished(self) -> int:
        """Items with an outcome, good or bad."""
        return self.done + self.failed

    def token_line(self) -> str:
        """Tokens, provider-reported vs estimated vs unknown."""
        return (
            f"tokens: {self.provider_tokens} provider-reported ({self.provider_calls} calls), "
            f"{self.estimated_tokens} estimated ({self.estimated_calls} calls), "
            f"unknown on {self.unknown_calls} calls"
        )

    def cost_line(self) -> str:
        """Cost, priced vs estimated vs unpriced."""
        line = f"cost: {self.priced_usd:.6f} USD priced ({self.priced_calls} calls)"
        if self.estimated_usd_calls:
            calls = self.estimated_usd_calls
            line += f", {self.estimated_usd:.6f} USD from estimated usage ({calls} calls)"
        line += f", unpriced on {self.unpriced_calls} calls"
        line += f", not priceable (usage unknown) on {self.usage_unknown_calls} calls"
        if self.cache_hits:
            line += f", {self.cache_hits} cache hits (no cost)"
        return line

    def vector_line(self) -> str | None:
        """``OBSERVED len(embedding) = N`` with the count checked (``None`` on chat jobs)."""
        if not self.lengths:
            return None
        observed = ", ".join(str(n) for n in sorted(self.lengths))
        return (
            f"OBSERVED len(embedding) = {observed} "
            f"({self.vectors} vectors checked: lengths, no NaN, none all-zero)"
        )
