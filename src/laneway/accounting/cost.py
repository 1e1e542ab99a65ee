"""The cost of one call: a number only when both usage and price are known."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

from laneway.accounting.rates import PER_MILLION, Rate
from laneway.core.types import Attempt, Usage

CostStatus = Literal["priced", "estimated", "unpriced", "usage_unknown", "cache_hit", "not_billed"]


class Cost(NamedTuple):
    """USD, or ``None`` with the reason it is unknown.

    ``estimated`` is a number computed from locally estimated usage; it is
    kept apart from ``priced`` wherever costs are summed.
    """

    usd: float | None
    status: CostStatus


USAGE_UNKNOWN = Cost(None, "usage_unknown")
CACHE_HIT = Cost(0.0, "cache_hit")
UNPRICED = Cost(None, "unpriced")
NOT_BILLED = Cost(0.0, "not_billed")
"""A failed call no upstream answered with content: known to have cost nothing."""
UNBILLED_OUTCOMES = frozenset({"connect", "unsupported", "not_ready"})
"""Attempt outcomes that bill nothing besides an error status: refused connections, skips."""


def billed_nothing(attempts: Iterable[Attempt]) -> bool:
    """Whether no attempt could have been billed: each met an error status, a refused
    connection, or sent nothing (a skip, a lane not ready); no attempt at all counts too.

    A timeout, a cut stream or a deadline may have been billed (the upstream may have
    generated before the answer was lost), and so may any answer with a body: their usage
    stays unknown.
    """
    return all(a.outcome.isdigit() or a.outcome in UNBILLED_OUTCOMES for a in attempts)


def cost_of(usage: Usage, rate: Rate | None, kind: str) -> Cost:
    """Price ``usage`` at ``rate`` for a ``chat``, ``ocr`` or ``embed`` call.

    Unknown usage wins over a missing price: a call whose usage is unknown
    could not be priced even with a price. Embed calls report no completion
    tokens (there are none to report); a chat call without them is unknown.
    """
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    if not usage.known or prompt is None or (completion is None and kind != "embed"):
        return USAGE_UNKNOWN
    if rate is None:
        return UNPRICED
    output = _output_usd(prompt, completion or 0, usage.reasoning_tokens, rate)
    if output is None:
        return UNPRICED
    usd = _input_usd(prompt, usage, rate) + output + (rate.per_request or 0.0)
    return Cost(usd, "estimated" if usage.source == "estimated" else "priced")


def _input_usd(prompt: int, usage: Usage, rate: Rate) -> float:
    """Prompt tokens; cache reads and cache writes each at their own rate when there is one."""
    read = min(usage.cached_tokens or 0, prompt)
    written = min(usage.cache_write_tokens or 0, prompt - read)
    read_rate = rate.cached_input or rate.input
    write_rate = rate.cache_write or rate.input
    fresh = (prompt - read - written) * rate.input.at(prompt)
    cached = read * read_rate.at(prompt) + written * write_rate.at(prompt)
    return (fresh + cached) / PER_MILLION


def _output_usd(prompt: int, completion: int, reasoning: int | None, rate: Rate) -> float | None:
    """Completion tokens, reasoning included (priced apart only where the rate says)."""
    if completion == 0:
        return 0.0
    if rate.output is None:
        return None
    thought = min(reasoning or 0, completion) if rate.reasoning is not None else 0
    usd = (completion - thought) * rate.output.at(prompt)
    if rate.reasoning is not None:
        usd += thought * rate.reasoning.at(prompt)
    return usd / PER_MILLION


def total_cost(parts: Iterable[Cost]) -> Cost:
    """The cost of a call made of several priced parts (a stream continued on another source).

    Unknown if any part is (unknown usage before a missing price, as in
    ``cost_of``), ``estimated`` if any part is.
    """
    costs = list(parts)
    for unknown in (USAGE_UNKNOWN, UNPRICED):
        if any(cost.status == unknown.status for cost in costs):
            return unknown
    usd = sum(cost.usd or 0.0 for cost in costs)
    estimated = any(cost.status == "estimated" for cost in costs)
    return Cost(usd, "estimated" if estimated else "priced")
