"""``FallbackStore``: shared state when Redis answers, local state when it does not.

A gateway must not stop serving because its coordination store did: each
operation gets ``timeout`` seconds; on an error or timeout the store says so
once in the log, counts an outage, and serves from local state. It tries
Redis again at most every ``retry_every`` seconds, so a dead Redis costs
one timeout per interval, not one per call. When Redis answers again, the
reservations and outcomes kept locally are replayed into it (quota spent
during the outage still counts), then local state is dropped.

Each ticket is settled where it was granted: a ticket granted locally is
settled locally; a shared one whose settlement cannot reach Redis still
has its outcome logged locally (its reservation expires in Redis).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from redis.exceptions import RedisError

from laneway.core.clock import Clock
from laneway.state.base import Admission, Ask, SourceRecord
from laneway.state.memory import MemoryStore
from laneway.state.redis_store import RedisStore

logger = logging.getLogger("laneway.state")

T = TypeVar("T")
SHARED_ERRORS = (RedisError, OSError, TimeoutError)


class FallbackStore:
    """``shared`` while it answers, ``local`` while it does not; see the module doc."""

    def __init__(
        self,
        shared: RedisStore,
        local: MemoryStore,
        clock: Clock,
        *,
        timeout: float = 0.5,
        retry_every: float = 1.0,
    ) -> None:
        self.shared = shared
        self.local = local
        self.clock = clock
        self.timeout = timeout
        self.retry_every = retry_every
        self.outages = 0
        """How many times the shared store became unreachable (a counter for metrics)."""
        self._down_since: float | None = None
        self._local_tickets: set[str] = set()

    @property
    def degraded(self) -> bool:
        """True while serving from local state."""
        return self._down_since is not None

    async def admit(self, lane: str, sources: Sequence[str], asks: Sequence[Ask]) -> Admission:
        """See ``SourceStore.admit``."""
        shared = await self._try(lambda: self.shared.admit(lane, sources, asks))
        if shared is not None:
            return shared
        admission = await self.local.admit(lane, sources, asks)
        if admission.granted is not None:
            self._local_tickets.add(admission.granted.ticket)
        return admission

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        """See ``SourceStore.settle``."""
        if ask.ticket not in self._local_tickets:
            shared = await self._try(lambda: self.shared.settle(lane, ask, tokens, code))
            if shared is not None:
                return shared
        self._local_tickets.discard(ask.ticket)
        return await self.local.settle(lane, ask, tokens, code)

    async def release(self, lane: str, ask: Ask) -> None:
        """See ``SourceStore.release``."""
        if ask.ticket in self._local_tickets:
            self._local_tickets.discard(ask.ticket)
            await self.local.release(lane, ask)
            return
        await self._try(lambda: self._released(lane, ask))

    async def aclose(self) -> None:
        """Close the shared store's connections."""
        await self.shared.aclose()

    async def _released(self, lane: str, ask: Ask) -> bool:
        await self.shared.release(lane, ask)
        return True

    async def _try(self, operation: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``operation`` on the shared store, or return ``None`` to use local state."""
        now = self.clock.now()
        if self._down_since is not None and now < self._down_since + self.retry_every:
            return None
        try:
            async with asyncio.timeout(self.timeout):
                if self._down_since is not None:
                    await self.shared.merge(self.local.dump())
                    self._came_back()
                return await operation()
        except SHARED_ERRORS as error:
            self._went_down(error, now)
            return None

    def _went_down(self, error: BaseException, now: float) -> None:
        if self._down_since is None:
            self.outages += 1
            logger.warning(
                "shared state at %s is unreachable (%s); serving on local state until it returns",
                _where(self.shared),
                type(error).__name__,
            )
        self._down_since = now

    def _came_back(self) -> None:
        self.local.clear()
        self._local_tickets.clear()
        self._down_since = None
        logger.warning(
            "shared state at %s is back; local state replayed into it", _where(self.shared)
        )


def _where(store: RedisStore) -> str:
    """Host, port and database of the store, without credentials."""
    kwargs = store.client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
