"""``FallbackStore``: shared state when Redis answers, local state when it does not.

A gateway must not stop serving because its coordination store did: each
operation gets ``timeout`` seconds; on an error or timeout the store says so
once in the log, counts an outage, and serves from local state. It tries
Redis again at most every ``retry_every`` seconds (and on a timer, so an idle
replica recovers too), so a dead Redis costs one timeout per interval, not
one per call. When Redis answers again, the reservations and outcomes kept
locally are replayed into it (quota spent during the outage still counts),
and the recovery is logged.

Quotas stay conservative while Redis is away: each replica enforces its share
of every ``rpm`` and ``tpm``, the limit times ``fallback_share`` when one is
configured, else divided by the number of replicas last seen in Redis (each
replica says it is alive every ``heartbeat`` seconds). The local window does
not start empty: every reservation Redis granted this replica is mirrored
locally, so what the replica spent before the outage counts against its
share; and for one quota window after Redis returns, a grant must fit the
share too, since Redis learns what another replica spent locally only when
that one reconnects. Together the replicas then stay within the limit. A
share below one request is rounded up to one, the only way a small quota can
be passed.

Each ticket is settled where it was granted: a ticket granted locally is
settled locally; a shared one whose settlement cannot reach Redis still
has its outcome logged locally (its reservation expires in Redis).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence

from laneway.core.clock import TimeSource
from laneway.core.outcomes import SourceRecord
from laneway.state.admission.base import Admission, Ask, Peek
from laneway.state.admission.memory import MemoryStore
from laneway.state.admission.redis_store import RedisStore
from laneway.state.outage import SharedOrLocal

logger = logging.getLogger("laneway.state")


class FallbackStore(SharedOrLocal):
    """``shared`` while it answers, ``local`` while it does not; see the module doc."""

    def __init__(
        self,
        shared: RedisStore,
        local: MemoryStore,
        clock: TimeSource,
        *,
        timeout: float = 0.5,
        retry_every: float = 1.0,
        fallback_share: float | None = None,
        heartbeat: float = 5.0,
    ) -> None:
        super().__init__(
            clock,
            timeout=timeout,
            retry_every=retry_every,
            fallback_share=fallback_share,
            heartbeat=heartbeat,
            resync_timeout=timeout,
        )
        self.shared = shared
        self.local = local
        self._local_tickets: set[str] = set()

    async def admit(self, lane: str, sources: Sequence[str], asks: Sequence[Ask]) -> Admission:
        """See ``SourceStore.admit``."""
        self._start_beating("state")
        shared = await self._try(lambda: self.shared.admit(lane, sources, asks))
        if shared is not None:
            granted = shared.granted
            if granted is None or not granted.quota_limited:
                return shared
            if (
                self._recovered_at is None
                or self.clock.now() >= self._recovered_at + granted.window
            ):
                self.local.mirror(lane, granted)
                return shared
            return await self._within_share(lane, granted, shared)
        share = self.share
        admission = await self.local.admit(lane, sources, [_shared_out(a, share) for a in asks])
        if admission.granted is None:
            return admission
        self.local_grants += 1
        self._local_tickets.add(admission.granted.ticket)
        original = next(a for a in asks if a.ticket == admission.granted.ticket)
        return Admission(original, admission.refusals, admission.records)

    async def _within_share(self, lane: str, granted: Ask, shared: Admission) -> Admission:
        """A shared grant in the window after an outage, kept only if it fits the local share.

        Until then Redis may not know what other replicas spent locally (each
        replays when it comes back), so the share still bounds this replica.
        """
        local = await self.local.admit(lane, [], [_shared_out(granted, self.share)])
        if local.granted is not None:
            return shared
        await self._try(lambda: self._released(lane, granted))
        return Admission(None, (*shared.refusals, *local.refusals), shared.records)

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        """See ``SourceStore.settle``."""
        if ask.ticket not in self._local_tickets:
            shared = await self._try(lambda: self.shared.settle(lane, ask, tokens, code))
            if shared is not None:
                if tokens is not None and ask.quota_limited:
                    self.local.mirror(lane, ask, tokens)
                return shared
        self._local_tickets.discard(ask.ticket)
        return await self.local.settle(lane, ask, tokens, code)

    async def release(self, lane: str, ask: Ask) -> None:
        """See ``SourceStore.release``."""
        await self.local.release(lane, ask)
        if ask.ticket in self._local_tickets:
            self._local_tickets.discard(ask.ticket)
            return
        await self._try(lambda: self._released(lane, ask))

    async def peek(
        self, lane: str, sources: Sequence[str], quotas: Sequence[tuple[str, float]]
    ) -> Peek:
        """See ``SourceStore.peek``: the shared state, or the local one while it is away."""
        shared = await self._try(lambda: self.shared.peek(lane, sources, quotas))
        return shared if shared is not None else await self.local.peek(lane, sources, quotas)

    async def aclose(self) -> None:
        """Stop the heartbeat; close the shared store's connections."""
        await self._stop_beating()
        await self.shared.aclose()

    async def _released(self, lane: str, ask: Ask) -> bool:
        await self.shared.release(lane, ask)
        return True

    async def _heartbeat(self, ttl: float) -> int:
        return await self.shared.heartbeat(self.replica, ttl)

    async def _resync(self) -> str:
        await self.shared.reconnect()  # the outage may have cut the pool's idle connections
        await self.shared.merge(self.local.dump())
        self.local.forget_outcomes()
        self._local_tickets.clear()
        return "local state replayed into it"

    def _log_outage(self, error: BaseException) -> None:
        logger.warning(
            "shared state at %s is unreachable (%s); serving on local state until it "
            "returns, each quota at %.0f%% (%s)",
            _where(self.shared),
            type(error).__name__,
            100 * self.share,
            self._share_source(),
        )

    def _log_recovery(self, summary: str) -> None:
        logger.warning("shared state at %s is back; %s", _where(self.shared), summary)


def _shared_out(ask: Ask, share: float) -> Ask:
    """``ask`` with its quotas cut to this replica's share (at least one request)."""
    if not ask.quota_limited:
        return ask
    rpm = None if ask.rpm is None else max(math.floor(ask.rpm * share), 1)
    tpm = None if ask.tpm is None else max(math.floor(ask.tpm * share), 1)
    return dataclasses.replace(ask, rpm=rpm, tpm=tpm)


def _where(store: RedisStore) -> str:
    """Host, port and database of the store, without credentials."""
    kwargs = store.client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
