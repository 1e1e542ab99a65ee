"""Key store change notices through Redis pub/sub: a nudge to reload, never the truth.

A replica that changed the key store publishes the store's new version on
``<prefix>:keys:changed``; every replica listening reloads the store at once
instead of at its next poll. The store stays the truth: a notice carries no
key, a lost one (Redis down, a replica reconnecting) costs only the wait for
the next poll of the store's version.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from redis.asyncio import Redis

from laneway.state.redis_client import fast_failing_client

LISTEN_TICK = 1.0
"""Seconds a listener waits for a message before it looks again (and pings a quiet link)."""


class RedisKeyNotices:
    """Publishes and hears the key store's changes on one Redis channel."""

    def __init__(self, publisher: Redis, listener: Redis, prefix: str = "laneway") -> None:
        self.publisher = publisher
        self.listener = listener
        self.channel = f"{prefix}:keys:changed"

    @classmethod
    def from_url(
        cls, url: str, *, prefix: str = "laneway", timeout: float = 0.5
    ) -> RedisKeyNotices:
        """Connect lazily: a publish fails within ``timeout``; the listener's link has no read
        timeout (it waits for messages) and is pinged every few seconds instead."""
        listener = Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=timeout,
            health_check_interval=5,
        )
        return cls(fast_failing_client(url, timeout), listener, prefix)

    async def publish(self, version: int) -> None:
        """Tell every listening replica the store is at ``version`` now."""
        await self.publisher.publish(self.channel, str(version))

    async def listen(self) -> AsyncIterator[int | None]:
        """``None`` once subscribed (a change may have gone unheard before), then the versions
        published, as they come; raises when the link breaks, to be called again."""
        async with self.listener.pubsub() as pubsub:
            await pubsub.subscribe(self.channel)
            yield None
            while True:
                message = await pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=LISTEN_TICK
                )
                if message is not None and message["type"] == "message":
                    yield int(message["data"])

    async def aclose(self) -> None:
        """Close both connection pools."""
        await self.publisher.aclose()
        await self.listener.aclose()
