"""Local token estimates for calls whose upstream reported no usage.

The estimator is deliberately crude and deterministic: one token per four
characters (rounded up) of the text that was sent and received, the figure
OpenAI quotes for English (``laneway.core.messages.estimate_tokens``, over
the text ``message_texts`` walks, as quota reservations count it). It
ignores per-message overhead, tool schemas and images, so it is a floor-ish
guess, never a bill: the result carries ``source="estimated"`` and its cost
the status ``estimated``, and it only ever replaces a usage the upstream
left out entirely, never fills gaps in a provider's figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from laneway.core.messages import ChatMessage, estimate_tokens, message_texts
from laneway.core.types import EmbedInput, Usage


def chat_usage_or_estimate(
    usage: Usage,
    estimate: bool,
    messages: Sequence[ChatMessage],
    content: str,
    reasoning: str | None,
) -> Usage:
    """``usage`` as reported, or (when ``estimate`` and nothing was reported) an estimate.

    Reasoning tokens are estimated from reasoning text when some arrived and
    stay unknown otherwise (a model may think without showing it).
    """
    if usage.known or not estimate:
        return usage
    prompt = estimate_tokens(*message_texts(messages))
    thought = estimate_tokens(reasoning) if reasoning else None
    completion = estimate_tokens(content) + (thought or 0)
    return Usage(prompt, completion, prompt + completion, thought, None, source="estimated")


def embed_usage_or_estimate(usage: Usage, estimate: bool, inputs: Iterable[EmbedInput]) -> Usage:
    """``usage`` as reported, or an estimate over the inputs (embeddings have no output).

    A token array needs no estimate: its length is its token count.
    """
    if usage.known or not estimate:
        return usage
    prompt = sum(estimate_tokens(item) if isinstance(item, str) else len(item) for item in inputs)
    return Usage(prompt, None, prompt, None, None, source="estimated")
