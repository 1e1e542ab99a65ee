"""``RedisStore``: the state port shared through Redis, one script call per operation.

Each operation is one Lua script (``laneway.state.admission.lua``), so an
admission is a single round trip and no two replicas can both take a quota's last slot.
A store made from a URL (``from_url``: ``laneway serve``, the library) sends
the scripts on a call's path (admit, settle, release) over its own pipelined
connection (``laneway.state.resp``), the rest (peek, merge, heartbeat) through
redis-py; a store given a client it does not own sends everything through it.
The store keeps wall-clock time, the timeline replicas share; it converts to
and from the caller's monotonic clock at this boundary. Errors are not
handled here: ``FallbackStore`` decides what an unreachable Redis means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from laneway.core.clock import TimeSource
from laneway.core.outcomes import Mark, SourceRecord
from laneway.state.admission import lua
from laneway.state.admission.base import (
    LOG_SIZE,
    Admission,
    Ask,
    Peek,
    QuotaUse,
    Refusal,
    SourceDump,
)
from laneway.state.admission.redis_records import KnownRecords
from laneway.state.batching import ScriptBatch
from laneway.state.redis_client import fast_failing_client, heartbeat
from laneway.state.resp import ScriptRunner, script_runner

LOG_TTL_MS = 600_000
"""How long an idle source's outcome log and last success are kept, in milliseconds."""

RECORDS_FRESH_FOR = 0.05
"""Seconds an admission that reserves nothing may use the records read last, no round trip.

Only an admission whose first ask has no ``rpm``, ``tpm`` or probe: it is
granted whatever Redis holds, and Redis would only answer the records. So
quotas and probe leases are always decided in Redis; what may lag by this
much is the other replicas' outcomes (health, breaker) seen by this one.
"""


class RedisStore:
    """Quota windows, outcome logs and probe leases in Redis, under ``prefix``."""

    def __init__(
        self,
        client: Redis,
        clock: TimeSource,
        *,
        prefix: str = "laneway",
        records_fresh_for: float = RECORDS_FRESH_FOR,
        runner: ScriptRunner | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix
        self.records_fresh_for = records_fresh_for
        self._admit = client.register_script(lua.ADMIT)
        self._settle = client.register_script(lua.SETTLE)
        self._release = client.register_script(lua.RELEASE)
        self._merge = client.register_script(lua.MERGE)
        self._peek = client.register_script(lua.PEEK)
        self._records = KnownRecords()
        self._batch = runner if runner is not None else ScriptBatch(client)

    @classmethod
    def from_url(
        cls, url: str, clock: TimeSource, *, prefix: str = "laneway", timeout: float = 0.5
    ) -> RedisStore:
        """Connect lazily to ``url``; a call fails fast instead of retrying in the client."""
        client = fast_failing_client(url, timeout)
        return cls(client, clock, prefix=prefix, runner=script_runner(client, timeout))

    async def admit(self, lane: str, sources: Sequence[str], asks: Sequence[Ask]) -> Admission:
        """See ``SourceStore.admit``: one script call, or none (see ``RECORDS_FRESH_FOR``)."""
        asked_at = self.clock.now()
        if asks and _reserves_nothing(asks[0]):
            since = asked_at - self.records_fresh_for
            recent = self._records.read_since(lane, sources, since)
            if recent is not None:
                return Admission(asks[0], (), recent)
        keys = [key for name in sources for key in self._keys(lane, name, "log", "ok", "logged")]
        args: list[Any] = [self._wall_now(), len(sources), LOG_SIZE]
        args += [self._records.logged(lane, name) for name in sources]
        for ask in asks:
            keys += [
                *self._keys(lane, ask.quota_source, "q", "t"),
                *self._keys(lane, ask.source, "probe"),
            ]
            limits = [ask.rpm or 0, ask.tpm or 0, repr(ask.window), repr(ask.probe)]
            args += [ask.ticket, ask.tokens, *limits]
        offset = self._offset()
        granted, refusals, records = await self._batch.run(self._admit, keys, args)
        pairs = zip(refusals[::2], refusals[1::2], strict=True)
        return Admission(
            asks[granted - 1] if granted else None,
            tuple(Refusal(a.source, float(s), r) for a, (s, r) in zip(asks, pairs, strict=False)),
            {
                name: self._records.update(lane, name, raw, offset, asked_at)
                for name, raw in zip(sources, records, strict=True)
            },
        )

    async def settle(
        self, lane: str, ask: Ask, tokens: int | None, code: str | None
    ) -> SourceRecord:
        """See ``SourceStore.settle``."""
        keys = [
            *self._keys(lane, ask.quota_source, "q", "t"),
            *self._keys(lane, ask.source, "probe", "log", "ok", "logged"),
        ]
        kept = -1 if tokens is None else tokens
        args: list[str | int] = [
            self._wall_now(),
            ask.ticket,
            kept,
            code or "",
            LOG_SIZE,
            LOG_TTL_MS,
            self._records.logged(lane, ask.source),
        ]
        offset, asked_at = self._offset(), self.clock.now()
        raw = await self._batch.run(self._settle, keys, args)
        return self._records.update(lane, ask.source, raw, offset, asked_at)

    async def release(self, lane: str, ask: Ask) -> None:
        """See ``SourceStore.release``."""
        keys = [
            *self._keys(lane, ask.quota_source, "q", "t"),
            *self._keys(lane, ask.source, "probe"),
        ]
        await self._batch.run(self._release, keys, [ask.ticket])

    async def peek(
        self, lane: str, sources: Sequence[str], quotas: Sequence[tuple[str, float]]
    ) -> Peek:
        """See ``SourceStore.peek``: one read-only script call."""
        keys = [key for name in sources for key in self._keys(lane, name, "log", "ok")]
        keys += [key for name, _ in quotas for key in self._keys(lane, name, "q", "t")]
        args: list[Any] = [self._wall_now(), len(sources), *(repr(w) for _, w in quotas)]
        offset = self._offset()
        records, use = await self._peek(keys=keys, args=args)
        return Peek(
            {name: _record(raw, offset) for name, raw in zip(sources, records, strict=True)},
            {
                name: QuotaUse(int(requests), int(tokens))
                for (name, _), (requests, tokens) in zip(quotas, use, strict=True)
            },
        )

    async def merge(self, dumps: Sequence[SourceDump]) -> None:
        """Replay state kept locally while Redis was away, in one pipeline."""
        offset = self._offset()
        async with self.client.pipeline(transaction=False) as pipe:
            for dump in dumps:
                keys = self._keys(dump.lane, dump.source, "q", "t", "log", "ok", "logged")
                args: list[Any] = [self._wall_now(), repr(dump.window), LOG_SIZE, LOG_TTL_MS]
                args.append(len(dump.entries))
                for entry in dump.entries:
                    args += [entry.ticket, repr(entry.at + offset), entry.tokens]
                args += [f"{mark.at + offset!r} {mark.code}" for mark in dump.record.marks]
                last_ok = dump.record.last_ok
                args.append("" if last_ok is None else repr(last_ok + offset))
                await self._merge(keys=keys, args=args, client=pipe)
            await pipe.execute()

    async def heartbeat(self, replica: str, ttl: float) -> int:
        """Say ``replica`` is alive; return how many replicas did so within ``ttl`` seconds."""
        return await heartbeat(self.client, f"{self.prefix}:replicas", replica, self.clock, ttl)

    async def reconnect(self) -> None:
        """Drop every connection, so the next calls open fresh ones (after an outage).

        The pool's idle connections may be ones the outage cut: redis-py finds that
        out only by failing a call on them, which would end the recovery.
        """
        await self._batch.aclose()
        await self.client.connection_pool.disconnect()

    async def aclose(self) -> None:
        """Close the script connection and the connection pool."""
        await self._batch.aclose()
        await self.client.aclose()

    def _keys(self, lane: str, source: str, *kinds: str) -> list[str]:
        return [f"{self.prefix}:{{{lane}}}:{source}:{kind}" for kind in kinds]

    def _wall_now(self) -> str:
        return repr(self.clock.wall())

    def _offset(self) -> float:
        """Wall minus monotonic time: add it to go to Redis's timeline, subtract to return."""
        return self.clock.wall() - self.clock.now()


def _reserves_nothing(ask: Ask) -> bool:
    """Whether Redis would grant ``ask`` whatever it holds (no quota, no probe lease)."""
    return not ask.quota_limited and ask.probe <= 0


def _record(raw: list[Any], offset: float) -> SourceRecord:
    lines, last_ok = raw
    marks = []
    for line in reversed(lines):
        at, _, code = line.partition(" ")
        marks.append(Mark(float(at) - offset, code))
    return SourceRecord(tuple(marks), float(last_ok) - offset if last_ok else None)
