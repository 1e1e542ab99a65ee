"""``RedisCacheStore``: cache entries shared by every gateway replica through Redis.

One ``MGET`` per lookup and one pipelined batch of ``SET`` (no transaction)
per store, so a batch of a thousand embedding items is two round trips.
Expiry is Redis's own (``PX``). The client fails fast (short socket
timeouts, no client-side retries): a slow cache must not eat a call's
deadline, and ``GuardedCache`` decides what an outage means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from laneway.core.errors import CacheUnavailable

DEFAULT_PREFIX = "laneway:cache:"
_ERRORS = (RedisError, OSError, TimeoutError)


class RedisCacheStore:
    """Cache entries under ``prefix`` in the Redis ``client`` talks to."""

    def __init__(self, client: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix

    @classmethod
    def from_url(
        cls, url: str, *, prefix: str = DEFAULT_PREFIX, timeout: float = 0.5
    ) -> RedisCacheStore:
        """Connect lazily to ``url`` (``redis://``, ``rediss://`` or ``unix://``)."""
        client = Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        return cls(client, prefix=prefix)

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """See ``CacheStore.get_many``."""
        if not keys:
            return []
        try:
            values = await self.client.mget([self.prefix + key for key in keys])
        except _ERRORS as exc:
            raise CacheUnavailable(f"Redis cache: {exc}") from exc
        return [value if isinstance(value, bytes) else None for value in values]

    async def put_many(self, items: Mapping[str, bytes], ttl: float | None) -> None:
        """See ``CacheStore.put_many``."""
        if not items:
            return
        expiry = None if ttl is None else max(1, round(ttl * 1000))
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for key, value in items.items():
                    pipe.set(self.prefix + key, value, px=expiry)
                await pipe.execute()
        except _ERRORS as exc:
            raise CacheUnavailable(f"Redis cache: {exc}") from exc

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.aclose()
