"""``NoCache``: the store of an engine whose every call must reach the upstream."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class NoCache:
    """A cache that never hits and keeps nothing (``laneway probe`` must reach the upstream)."""

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Nothing is ever found."""
        return [None] * len(keys)

    async def put_many(self, items: Mapping[str, bytes], ttl: float | None) -> None:
        """Nothing is kept."""

    async def aclose(self) -> None:
        """Nothing to release."""
