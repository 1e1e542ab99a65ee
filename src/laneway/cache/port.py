"""The cache port: a byte-valued key store with optional expiry.

Both caches laneway keeps (per-item embeddings, whole chat responses) are
plain key/value lookups, so one narrow port serves both, and each backend
(SQLite, Redis) is one small adapter. Values are opaque bytes: encoding is
the caller's business, so a backend never needs to know what it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class CacheStore(Protocol):
    """A key/value store for cache entries. Errors surface as ``CacheUnavailable``."""

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The value of each key, in order; ``None`` for absent or expired ones."""
        ...

    async def put_many(self, items: Mapping[str, bytes], ttl: float | None) -> None:
        """Store every item, each expiring after ``ttl`` seconds (``None``: never)."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...
