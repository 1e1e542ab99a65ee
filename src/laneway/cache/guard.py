"""``GuardedCache``: a cache whose failures are misses, never call failures.

A cache only saves money and time, so an unreachable or slow backend must
not fail a call or eat its deadline: each operation gets ``timeout``
seconds, and a failure is logged once, read as a miss, and rests the
backend for ``retry_every`` seconds, so a dead Redis costs one timeout per
interval, not one per call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from laneway.cache.port import CacheStore
from laneway.core.clock import TimeSource
from laneway.core.errors import CacheUnavailable

logger = logging.getLogger("laneway.cache")


class GuardedCache:
    """Wraps ``store`` so that its failures read as misses (see the module doc)."""

    def __init__(
        self,
        store: CacheStore,
        clock: TimeSource,
        *,
        timeout: float = 0.5,
        retry_every: float = 5.0,
    ) -> None:
        self.store = store
        self.clock = clock
        self.timeout = timeout
        self.retry_every = retry_every
        self.failures = 0
        """How many operations failed (a counter for metrics and tests)."""
        self._down_since: float | None = None

    @property
    def resting(self) -> bool:
        """True while a recent failure keeps the backend out of use."""
        down = self._down_since
        return down is not None and self.clock.now() - down < self.retry_every

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The store's values, or all misses when it fails or rests."""
        if keys and not self.resting:
            try:
                async with asyncio.timeout(self.timeout):
                    values = await self.store.get_many(keys)
            except (CacheUnavailable, TimeoutError) as exc:
                self._failed(exc)
            else:
                self._answered()
                return values
        return [None] * len(keys)

    async def put_many(self, items: Mapping[str, bytes], ttl: float | None) -> None:
        """Store ``items``; a failure is logged and dropped."""
        if not items or self.resting:
            return
        try:
            async with asyncio.timeout(self.timeout):
                await self.store.put_many(items, ttl)
        except (CacheUnavailable, TimeoutError) as exc:
            self._failed(exc)
        else:
            self._answered()

    async def aclose(self) -> None:
        """Close the wrapped store."""
        await self.store.aclose()

    def _failed(self, exc: Exception) -> None:
        self.failures += 1
        if self._down_since is None:
            reason = str(exc) or f"no answer within {self.timeout}s"
            logger.warning("cache unavailable, serving without it: %s", reason)
        self._down_since = self.clock.now()

    def _answered(self) -> None:
        if self._down_since is not None:
            logger.warning("cache available again")
            self._down_since = None
