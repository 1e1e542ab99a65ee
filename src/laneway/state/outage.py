"""``SharedOrLocal``: how a replica notices Redis is gone, serves its share, and resyncs.

Source quotas (``FallbackStore``) and key limits (``FallbackKeyLedger``)
behave alike while Redis is away, so the behaviour lives here once. Each
Redis operation gets ``timeout`` seconds, bounded by its connection: the script
connection's silence watch (``RespPipe``) or redis-py's socket timeouts, not by a
timer of its own (an ``asyncio.timeout`` cost 5-8 µs an operation, four a keyed
call; only the heartbeat, once a ``heartbeat``, keeps one). On an error or timeout the replica
logs once, counts an outage and serves from local state, trying Redis again
at most every ``retry_every`` seconds (and every ``heartbeat`` seconds on a
timer, so an idle replica returns too): a dead Redis costs one timeout per
interval, not one per call. Each replica says it is alive every ``heartbeat``
seconds; while Redis is away it may spend ``share`` of each limit:
``fallback_share`` when configured, else one over the replicas last seen. A
drop in that count is believed only once it has held for a heartbeat TTL, so
the first replica back in a Redis restarted empty does not take every share.
When Redis answers again, ``_resync`` replays what was kept locally before
any other operation, and the recovery is logged.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.exceptions import RedisError

from laneway.core.clock import TimeSource

T = TypeVar("T")
SHARED_ERRORS = (RedisError, OSError, TimeoutError)


class SharedOrLocal(ABC):
    """The outage half of a fallback adapter; subclasses say how to beat, resync and log."""

    def __init__(
        self,
        clock: TimeSource,
        *,
        timeout: float,
        retry_every: float,
        fallback_share: float | None,
        heartbeat: float,
        resync_timeout: float,
    ) -> None:
        self.clock = clock
        self.timeout = timeout
        self.retry_every = retry_every
        self.fallback_share = fallback_share
        self.heartbeat = heartbeat
        self.resync_timeout = resync_timeout
        self.replica = uuid.uuid4().hex
        self.replicas: int | None = None
        """Replicas alive at the last heartbeat (this one included); ``None`` before it."""
        self.outages = 0
        """How many times Redis became unreachable (a counter for metrics)."""
        self.local_grants = 0
        """Grants made on local state during outages (a counter for metrics)."""
        self._down_since: float | None = None
        self._recovered_at: float | None = None
        self._next_beat = -math.inf
        self._fewer_since: float | None = None
        """When heartbeats first counted fewer than ``replicas`` (``None``: they did not)."""
        self._beating: asyncio.Task[None] | None = None
        self._resyncing = asyncio.Lock()

    @property
    def degraded(self) -> bool:
        """True while serving from local state."""
        return self._down_since is not None

    @property
    def share(self) -> float:
        """The part of each limit this replica may spend while Redis is away."""
        if self.fallback_share is not None:
            return self.fallback_share
        return 1.0 / (self.replicas or 1)

    def _start_beating(self, name: str) -> None:
        """Start the heartbeat task (on the first call: it needs the running loop)."""
        if self._beating is None:
            self._beating = asyncio.get_running_loop().create_task(self._beat(), name=name)

    async def _stop_beating(self) -> None:
        """Cancel the heartbeat and wait for it to end.

        ``asyncio.wait``, not awaiting the task under a suppressed ``CancelledError``:
        that would swallow a cancel of the caller too, and a caller bounding
        ``aclose`` with a timeout would wait on.
        """
        if self._beating is not None:
            self._beating.cancel()
            await asyncio.wait([self._beating])

    async def _beat(self) -> None:
        """Keep this replica counted (and notice Redis's return) even while no call comes.

        Only ``_stop_beating`` cancels this task, and a cancel must end it: a
        cancel that lands inside a Redis call can come back as a normal return
        (redis-py 8.1's pipeline swallows one now and then), and a loop that
        went on would leave ``aclose`` awaiting it forever. So the task checks,
        after each beat, whether it was asked to stop.
        """
        beating = asyncio.current_task()
        assert beating is not None
        while True:
            await asyncio.sleep(self.heartbeat)
            await self._try(nothing)
            if beating.cancelling():
                raise asyncio.CancelledError

    async def _try(self, operation: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``operation`` on Redis (resyncing first after an outage), or ``None``."""
        now = self.clock.now()
        if self._down_since is not None and now < self._down_since + self.retry_every:
            return None
        if self._resyncing.locked():
            return None  # another call is resyncing: this one does not wait for it
        try:
            if self._down_since is not None:
                async with self._resyncing, asyncio.timeout(self.resync_timeout):
                    summary = await self._resync()
                self._down_since = None
                self._recovered_at = self.clock.now()
                self._log_recovery(summary)
            if now >= self._next_beat:
                # Set before awaiting, so calls concurrent with it send none of their own
                self._next_beat = now + self.heartbeat
                async with asyncio.timeout(self.timeout):
                    self._counted(await self._heartbeat(3 * self.heartbeat), now)
            return await operation()
        except SHARED_ERRORS as error:
            self._next_beat = -math.inf  # the first call Redis answers again says it is alive
            if self._down_since is None:
                self.outages += 1
                self._log_outage(error)
            self._down_since = now
            return None

    def _counted(self, seen: int, now: float) -> None:
        """Take a heartbeat's replica count; fewer than before only once that held a TTL.

        A Redis restarted empty holds only the heartbeat of the first replica
        back, which would then take the whole of each limit while the others
        still spend theirs. Every live replica beats within the heartbeat TTL
        (``3 * heartbeat``), so a drop still seen a TTL later is believed.
        """
        if self.replicas is None or seen >= self.replicas:
            self.replicas, self._fewer_since = seen, None
            return
        if self._fewer_since is None:
            self._fewer_since = now
        elif now >= self._fewer_since + 3 * self.heartbeat:
            self.replicas, self._fewer_since = seen, None

    def _share_source(self) -> str:
        """Where ``share`` comes from, for the log."""
        if self.fallback_share is not None:
            return "state.fallback_share"
        if self.replicas is None:
            return "no replica count seen yet"
        return f"{self.replicas} replica(s) last seen"

    @abstractmethod
    async def _heartbeat(self, ttl: float) -> int:
        """Say this replica is alive; return how many were within ``ttl`` seconds."""

    @abstractmethod
    async def _resync(self) -> str:
        """Replay local state into Redis; return what to say about it in the log."""

    @abstractmethod
    def _log_outage(self, error: BaseException) -> None:
        """Say once that Redis is gone, and what each replica may spend meanwhile."""

    @abstractmethod
    def _log_recovery(self, summary: str) -> None:
        """Say that Redis is back, with ``_resync``'s summary."""


async def nothing() -> bool:
    """An operation that only reaches Redis (a heartbeat, and a resync when due)."""
    return True
