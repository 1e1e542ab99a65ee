"""Per-key limits shared through Redis: one script call to reserve, one to settle.

A ledger made from a URL (``from_url``) sends its reserve and settle scripts over
its own pipelined connection (``laneway.state.resp``); one given a client sends them
through it, concurrent calls sharing pipelines (``ScriptBatch``). Each call awaits
its own answer.

Per key, under ``<prefix>:key:{<key>}`` (hash-tagged by its name, so a key's
figures share a cluster slot):
``q`` and ``t`` the request/token window (``laneway.state.window_lua``'s layout),
``run`` a sorted set of running tickets scored by their lease's end,
``held`` a hash of ticket -> ``"<usd> <spend key> ..."`` (the counters the
call is counted in), and one float of USD per counter, ``spend:<period
name>``, expiring on its own after its period (a ``total`` never does); a
team's counters are ``<prefix>:team:{<team>}:spend:<period name>``. A call
of a key with a team budget touches both tags in one script: laneway talks
to one Redis (not a cluster), where that is atomic.
``replayed`` maps the tickets of calls replayed after an outage to the USD
applied for each. The scripts follow ``MemoryKeyLedger`` step for step.
Errors are not handled here: ``laneway.state.keys.fallback`` decides what an
unreachable Redis means.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from redis.asyncio import Redis

from laneway.core.clock import TimeSource
from laneway.policy.budget import period_left
from laneway.state.batching import ScriptBatch
from laneway.state.keys.ledger import (
    CONCURRENCY_WAIT,
    SLOT_LEASE,
    KeyAsk,
    KeyGrant,
    KeyRefusal,
    LocalCall,
    Spend,
    counters,
    key_owner,
    refusal_of,
)
from laneway.state.redis_client import fast_failing_client, heartbeat
from laneway.state.resp import ScriptRunner, script_runner
from laneway.state.window_lua import WINDOW_FUNCTIONS

TTL_MS = {"day": 2 * 86_400_000, "week": 9 * 86_400_000, "month": 32 * 86_400_000}
"""How long a counter of each period outlives its first call; a ``total``'s is kept."""

RESERVE = (
    WINDOW_FUNCTIONS
    + """
-- KEYS: q, t, run, held, then one spend counter per budget period the call counts in.
-- ARGV: now, ticket, tokens, rpm, tpm, window, max concurrency, lease, usd, then per
--       counter its cap and its ttl in ms (limits, caps and ttls: 0 = none).
-- Returns the refusing limit and its figure ('budget', the counter's number and its
-- spend for a budget), or '' and then the window's requests, tokens and seconds
-- until its oldest reservation leaves it, and each counter's spend (this call included).
local now, ticket, tokens = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local rpm, tpm, window = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local most, lease, usd = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local counted = #KEYS - 4
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', num(now))
if most > 0 and redis.call('ZCARD', KEYS[3]) >= most then return {'max_concurrency', '0'} end
if rpm > 0 or tpm > 0 then
  expire(KEYS[1], KEYS[2], window, now)
  if tpm > 0 then tokens = math.min(tokens, tpm) end
  local by_rpm = rpm_wait(KEYS[1], rpm, window, now)
  if by_rpm > 0 then return {'rpm', num(by_rpm)} end
  local by_tpm = tpm_wait(KEYS[1], KEYS[2], tokens, tpm, window, now)
  if by_tpm > 0 then return {'tpm', num(by_tpm)} end
end
for i = 1, counted do
  local cap = tonumber(ARGV[8 + 2 * i])
  if cap > 0 then
    local spent = tonumber(redis.call('GET', KEYS[4 + i]) or '0')
    if spent + usd > cap then return {'budget', num(spent), tostring(i)} end
  end
end
if rpm > 0 or tpm > 0 then add(KEYS[1], KEYS[2], ticket, now, tokens, window) end
redis.call('ZADD', KEYS[3], num(now + lease), ticket)
redis.call('PEXPIRE', KEYS[3], math.ceil(lease * 1000))
redis.call('HSET', KEYS[4], ticket, num(usd) .. ' ' .. table.concat(KEYS, ' ', 5))
redis.call('PEXPIRE', KEYS[4], math.ceil(lease * 1000))
local spend = {}
for i = 1, counted do
  spend[i] = redis.call('INCRBYFLOAT', KEYS[4 + i], num(usd))
  local ttl = tonumber(ARGV[9 + 2 * i])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[4 + i], ttl) end
end
local answer = {'', '0', 0, 0, '0'}
if rpm > 0 or tpm > 0 then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local frees = math.max(tonumber(oldest[2]) + window - now, 0)
  local held = tonumber(redis.call('HGET', KEYS[2], '=sum') or '0')
  answer = {'', '0', redis.call('ZCARD', KEYS[1]), held, num(frees)}
end
for i = 1, counted do answer[5 + i] = spend[i] end
return answer
"""
)

SETTLE = """
-- KEYS: t, run, held. ARGV: ticket, tokens (-1 keeps), usd ('' keeps).
-- Returns the spend keys the call was counted in, each followed by its spend after
-- settling ({} when the ticket held none).
local ticket, tokens = ARGV[1], tonumber(ARGV[2])
if tokens >= 0 then
  local old = redis.call('HGET', KEYS[1], ticket)
  if old then
    redis.call('HSET', KEYS[1], ticket, tokens)
    redis.call('HINCRBY', KEYS[1], '=sum', tokens - tonumber(old))
  end
end
redis.call('ZREM', KEYS[2], ticket)
local held = redis.call('HGET', KEYS[3], ticket)
if not held then return {} end
redis.call('HDEL', KEYS[3], ticket)
local reserved, change = nil, nil
local answer = {}
for word in string.gmatch(held, '%S+') do
  if not reserved then
    reserved = tonumber(word)
    if ARGV[3] ~= '' then change = string.format('%.9f', tonumber(ARGV[3]) - reserved) end
  elseif redis.call('EXISTS', word) == 1 then
    if change then redis.call('INCRBYFLOAT', word, change) end
    answer[#answer + 1] = word
    answer[#answer + 1] = redis.call('GET', word)
  end
end
return answer
"""

REPLAY = (
    WINDOW_FUNCTIONS
    + """
-- One call a replica counted on its own while Redis was away, applied once.
-- KEYS: q, t, run, held, replayed, then the spend counters it was counted in.
-- ARGV: ticket, at, tokens, window (0: the key has none), usd, slot lease end (0: ended),
--       now, replayed ttl, then each counter's ttl in ms (0: kept).
-- ``replayed`` maps each replayed ticket to the USD applied for it, so replaying again
-- (a replay cut midway, or a call settled since) applies only the difference.
local ticket, at, tokens = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local window, usd, lease_end, now = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local applied = redis.call('HGET', KEYS[5], ticket)
local change = usd
if applied then change = string.format('%.9f', tonumber(usd) - tonumber(applied)) end
if window > 0 then
  drop(KEYS[1], KEYS[2], ticket)
  if at > now - window then add(KEYS[1], KEYS[2], ticket, at, tokens, window) end
end
if tonumber(change) ~= 0 or not applied then
  for i = 6, #KEYS do
    redis.call('INCRBYFLOAT', KEYS[i], change)
    local ttl = tonumber(ARGV[3 + i])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
redis.call('HSET', KEYS[5], ticket, usd)
redis.call('PEXPIRE', KEYS[5], ARGV[8])
if lease_end > now then
  redis.call('ZADD', KEYS[3], num(lease_end), ticket)
  redis.call('PEXPIRE', KEYS[3], math.ceil((lease_end - now) * 1000))
  redis.call('HSET', KEYS[4], ticket, usd .. ' ' .. table.concat(KEYS, ' ', 6))
  redis.call('PEXPIRE', KEYS[4], math.ceil((lease_end - now) * 1000))
else
  redis.call('ZREM', KEYS[3], ticket)
  redis.call('HDEL', KEYS[4], ticket)
end
return 1
"""
)


class RedisKeyLedger:
    """Every key's windows, slots and spend in Redis, under ``prefix``."""

    def __init__(
        self,
        client: Redis,
        clock: TimeSource,
        *,
        prefix: str = "laneway",
        runner: ScriptRunner | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix
        self._reserve = client.register_script(RESERVE)
        self._settle = client.register_script(SETTLE)
        self._replay = client.register_script(REPLAY)
        self._batch = runner if runner is not None else ScriptBatch(client)

    @classmethod
    def from_url(
        cls, url: str, clock: TimeSource, *, prefix: str = "laneway", timeout: float = 0.5
    ) -> RedisKeyLedger:
        """Connect lazily to ``url``; a call fails fast instead of retrying in the client."""
        client = fast_failing_client(url, timeout)
        return cls(client, clock, prefix=prefix, runner=script_runner(client, timeout))

    async def reserve(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """See ``KeyLedger.reserve``."""
        return (await self.reserve_reporting(ask))[0]

    async def reserve_reporting(self, ask: KeyAsk) -> tuple[KeyRefusal | KeyGrant, Spend | None]:
        """``reserve``, and on a grant the counters' spend Redis now counts (same round trip)."""
        wall = self.clock.wall()
        found = counters(ask, wall)
        keys = [*self._figures(ask, "q", "t", "run", "held")]
        args: list[Any] = [
            repr(wall),
            ask.ticket,
            ask.tokens,
            ask.rpm or 0,
            ask.tpm or 0,
            repr(ask.window),
            ask.max_concurrency or 0,
            repr(SLOT_LEASE),
            repr(ask.usd),
        ]
        for counter in found:
            keys.append(self._spend_key(counter.name))
            args += [repr(counter.cap.usd) if counter.cap else 0, TTL_MS.get(counter.period, 0)]
        limit, figure, *window = await self._batch.run(self._reserve, keys, args)
        if not limit:
            requests, tokens, frees_in, *spent = window
            spend = {c.name: float(s) for c, s in zip(found, spent, strict=True)}
            return KeyGrant(int(requests), int(tokens), float(frees_in)), spend
        if limit == "budget":
            cap = found[int(window[0]) - 1].cap
            assert cap is not None
            return refusal_of(cap, float(figure), period_left(cap.period, wall)), None
        return _refusal(ask, limit, float(figure)), None

    async def settle(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> Spend:
        """See ``KeyLedger.settle``."""
        return await self.settle_reporting(ask, tokens, usd)

    async def settle_reporting(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> Spend:
        """``settle``, and the call's counters as Redis counts them after it (empty: the call
        held none)."""
        args: list[str | int] = [
            ask.ticket,
            -1 if tokens is None else tokens,
            "" if usd is None else repr(usd),
        ]
        keys = self._figures(ask, "t", "run", "held")
        spent = await self._batch.run(self._settle, keys, args)
        pairs = zip(spent[::2], spent[1::2], strict=True)
        return {self._counter_name(key): float(value) for key, value in pairs}

    async def replay(self, calls: Sequence[LocalCall]) -> None:
        """Apply calls counted in a replica's memory while Redis was away, in one pipeline.

        Each call is applied once however often this runs (see ``REPLAY``): a
        replay cut midway is simply run again.
        """
        now = self.clock.wall()
        async with self.client.pipeline(transaction=False) as pipe:
            for call in calls:
                ask = call.ask
                periods = {c.name: c.period for c in counters(ask, call.at)}
                keys = [
                    *self._figures(ask, "q", "t", "run", "held", "replayed"),
                    *(self._spend_key(name) for name in call.counters),
                ]
                windowed = ask.rpm is not None or ask.tpm is not None
                args: list[Any] = [
                    ask.ticket,
                    repr(call.at),
                    call.tokens,
                    repr(ask.window) if windowed else 0,
                    f"{call.usd:.9f}",
                    repr(call.at + SLOT_LEASE) if call.running else 0,
                    repr(now),
                    TTL_MS["month"],
                    *(TTL_MS.get(periods.get(name, "month"), 0) for name in call.counters),
                ]
                await self._replay(keys=keys, args=args, client=pipe)
            await pipe.execute()

    async def heartbeat(self, replica: str, ttl: float) -> int:
        """Say ``replica`` serves keys; return how many did so within ``ttl`` seconds."""
        return await heartbeat(self.client, f"{self.prefix}:key-replicas", replica, self.clock, ttl)

    async def spent(self, key: str, period: str) -> float:
        """USD counted for ``key`` in ``period`` (a period name: ``2026-12``), reservations
        included."""
        value = await self.client.get(self._spend_key(f"{key_owner(key)}:{period}"))
        return float(value or 0.0)

    async def read_spend(self, names: Iterable[str]) -> Spend:
        """See ``KeyLedger.read_spend`` (one ``MGET``)."""
        wanted = list(names)
        if not wanted:
            return {}
        values = await self.client.mget([self._spend_key(name) for name in wanted])
        return {name: float(v or 0.0) for name, v in zip(wanted, values, strict=True)}

    async def claim(self, name: str, ttl: float) -> bool:
        """See ``KeyLedger.claim``: ``SET NX`` of ``<prefix>:claim:<name>`` for ``ttl``."""
        claimed = await self.client.set(
            f"{self.prefix}:claim:{name}", "1", nx=True, px=int(ttl * 1000)
        )
        return bool(claimed)

    async def reconnect(self) -> None:
        """Drop every connection, so the next calls open fresh ones (after an outage)."""
        await self._batch.aclose()
        await self.client.connection_pool.disconnect()

    async def aclose(self) -> None:
        """Close the script connection and the connection pool."""
        await self._batch.aclose()
        await self.client.aclose()

    def _figures(self, ask: KeyAsk, *kinds: str) -> list[str]:
        """The Redis keys of ``ask``'s key's figures."""
        return [f"{self.prefix}:key:{{{ask.key}}}:{kind}" for kind in kinds]

    def _spend_key(self, counter: str) -> str:
        """The Redis key of the counter named ``counter`` (``Counter.name``): a key's
        ``key:<key>:<period name>`` is ``<prefix>:key:{<key>}:spend:<period name>``."""
        owner, _, period = counter.rpartition(":")
        kind, _, name = owner.partition(":")
        return f"{self.prefix}:{kind}:{{{name}}}:spend:{period}"

    def _counter_name(self, key: str) -> str:
        """The counter name of the Redis key ``key`` (``_spend_key`` backwards)."""
        owner, _, period = key.removeprefix(f"{self.prefix}:").rpartition(":spend:")
        kind, _, tagged = owner.partition(":")
        return f"{kind}:{tagged[1:-1]}:{period}"


def _refusal(ask: KeyAsk, limit: str, figure: float) -> KeyRefusal:
    """The script's refusal of a window or a slot as a ``KeyRefusal``."""
    if limit == "max_concurrency":
        assert ask.max_concurrency is not None
        return KeyRefusal(limit, ask.max_concurrency, CONCURRENCY_WAIT)
    cap = ask.rpm if limit == "rpm" else ask.tpm
    assert cap is not None
    return KeyRefusal(limit, cap, figure)
