"""Picks the adapter for a source's ``provider:`` name."""

from __future__ import annotations

from laneway.providers.anthropic import AnthropicProvider
from laneway.providers.azure import AzureOpenAIProvider
from laneway.providers.base import Provider
from laneway.providers.gemini import GeminiProvider
from laneway.providers.openai import OpenAIProvider


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
        return OpenAIProvider(base_url, model, api_key)
    if kind == "azure":
        return AzureOpenAIProvider(base_url, model, api_key, api_version)
    if kind == "gemini":
        return GeminiProvider(base_url, model, api_key)
    if kind == "anthropic":
        return AnthropicProvider(base_url, model, api_key, max_tokens)
    raise ValueError(f"unknown provider {kind!r}")
