"""What every Redis adapter of the state layer shares: a client that fails fast, and heartbeats.

Source admission (``laneway.state.admission``) and key limits
(``laneway.state.keys``) each keep their figures in Redis and fall back to
memory while it is away; both need calls that fail within ``state.timeout``
and a count of the replicas alive.
"""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from laneway.core.clock import TimeSource


def fast_failing_client(url: str, timeout: float) -> Redis:
    """A lazily connecting client whose calls fail after ``timeout`` instead of retrying."""
    return Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


async def heartbeat(client: Redis, key: str, replica: str, clock: TimeSource, ttl: float) -> int:
    """Mark ``replica`` alive in the sorted set ``key``; count those alive within ``ttl`` s."""
    now = clock.wall()
    async with client.pipeline(transaction=True) as pipe:
        pipe.zadd(key, {replica: now})
        pipe.zremrangebyscore(key, "-inf", now - ttl)
        pipe.zcard(key)
        pipe.pexpire(key, int(ttl * 1000))
        _, _, count, _ = await pipe.execute()
    return max(int(count), 1)
