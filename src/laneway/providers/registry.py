"""Picks the adapter for a source's ``provider:`` name.

Each adapter is imported when a source first names it: ``laneway serve`` with
OpenAI-shaped sources only (the usual case) does not load the Anthropic and
Gemini wire formats (their request builders and schema converters).
"""

from __future__ import annotations

from laneway.providers.base import Provider


def make_provider(
    kind: str,
    base_url: str,
    model: str,
    api_key: str | None,
    *,
    max_tokens: int | None = None,
    api_version: str | None = None,
) -> Provider:
    """Return the adapter for ``kind`` bound to one source.

    ``max_tokens`` is the source's default output limit; only Anthropic, which
    refuses calls without one, takes it. ``api_version`` is Azure's.
    """
    if kind == "openai":
        from laneway.providers.openai import OpenAIProvider

        return OpenAIProvider(base_url, model, api_key)
    if kind == "azure":
        from laneway.providers.azure import AzureOpenAIProvider

        return AzureOpenAIProvider(base_url, model, api_key, api_version)
    if kind == "gemini":
        from laneway.providers.gemini import GeminiProvider

        return GeminiProvider(base_url, model, api_key)
    if kind == "anthropic":
        from laneway.providers.anthropic import AnthropicProvider

        return AnthropicProvider(base_url, model, api_key, max_tokens)
    raise ValueError(f"unknown provider {kind!r}")
