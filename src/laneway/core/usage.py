"""Adding up usage of calls made in parts, and writing it in OpenAI's shape.

A total is only as known as its least known part: one part with no usage
makes the whole total unknown, since summing the rest would report a number
lower than what was spent. A figure missing from any part (e.g. embeddings
have no completion tokens) is missing from the total.

``openai_usage_dict`` is here, in core, because OpenAI's answer shape is
laneway's neutral one: the provider adapters write every native answer's
``raw`` in it (what ``LLMResponse.raw`` and ``tool_calls`` give a library
caller), and the gateway writes an estimated usage into its answers with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from laneway.core.types import NO_USAGE, Usage

NOTHING_SENT = Usage(prompt_tokens=0, total_tokens=0, source="provider")
"""The usage of a call served entirely from a cache: nothing went upstream."""


def sum_usage(parts: Iterable[Usage]) -> Usage:
    """The field-wise sum of ``parts``; unknown if any part is (see the module doc).

    An estimated part makes the total ``estimated``. No parts at all sum to
    ``NOTHING_SENT``.
    """
    parts = list(parts)
    if not parts:
        return NOTHING_SENT
    if any(not part.known for part in parts):
        return NO_USAGE
    return Usage(
        prompt_tokens=_total(p.prompt_tokens for p in parts),
        completion_tokens=_total(p.completion_tokens for p in parts),
        total_tokens=_total(p.total_tokens for p in parts),
        reasoning_tokens=_total(p.reasoning_tokens for p in parts),
        cached_tokens=_total(p.cached_tokens for p in parts),
        cache_write_tokens=_total(p.cache_write_tokens for p in parts),
        source="estimated" if any(p.source == "estimated" for p in parts) else "provider",
    )


def _total(values: Iterable[int | None]) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def openai_usage_dict(usage: Usage) -> dict[str, Any] | None:
    """``usage`` as OpenAI's object for ``raw`` answers; ``None`` when unknown."""
    if not usage.known:
        return None
    out: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    details = {"cached_tokens": usage.cached_tokens, "cache_write_tokens": usage.cache_write_tokens}
    known = {name: count for name, count in details.items() if count is not None}
    if known:
        out["prompt_tokens_details"] = known
    return out
