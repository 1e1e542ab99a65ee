"""Picks the adapter for a source's ``provider:`` name."""

from __future__ import annotations

from laneway.providers.base import Provider
from laneway.providers.openai import OpenAIProvider


def make_provider(kind: str, base_url: str, model: str, api_key: str | None) -> Provider:
    """Return the adapter for ``kind`` bound to one source."""
    if kind == "openai":
        return OpenAIProvider(base_url, model, api_key)
    raise ValueError(f"unknown provider {kind!r}")
