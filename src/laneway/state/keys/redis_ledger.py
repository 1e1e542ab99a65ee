"""Per-key limits shared through Redis: one script call to reserve, one to settle.

Concurrent calls share pipelines (``ScriptBatch``), each awaiting its own answer.

Per key (hash-tagged by its name, so a key's figures share a cluster slot):
``q`` and ``t`` the request/token window (``laneway.state.window_lua``'s layout),
``run`` a sorted set of running tickets scored by their lease's end,
``held`` a hash of ticket -> ``"<usd> <day key> <month key>"``, and one
float of USD per budget period, ``spend:<day>`` and ``spend:<month>``,
expiring on their own after the period; ``replayed`` maps the tickets of
calls replayed after an outage to the USD applied for each. The scripts
follow ``MemoryKeyLedger`` step for step. Errors are not handled here:
``laneway.state.keys.fallback`` decides what an unreachable Redis means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from laneway.core.clock import TimeSource
from laneway.policy.budget import period_resets, periods
from laneway.state.batching import ScriptBatch
from laneway.state.keys.ledger import (
    CONCURRENCY_WAIT,
    SLOT_LEASE,
    KeyAsk,
    KeyGrant,
    KeyRefusal,
    LocalCall,
    Spend,
)
from laneway.state.redis_client import fast_failing_client, heartbeat
from laneway.state.window_lua import WINDOW_FUNCTIONS

DAY_TTL_MS = 2 * 86_400_000
MONTH_TTL_MS = 32 * 86_400_000

RESERVE = (
    WINDOW_FUNCTIONS
    + """
-- KEYS: q, t, run, held, day spend, month spend.
-- ARGV: now, ticket, tokens, rpm, tpm, window, max concurrency, lease, usd,
--       daily cap, monthly cap, day ttl, month ttl (caps and limits: 0 = none).
-- Returns the refusing limit and its figure, or '' and then the window's requests,
-- tokens and seconds until its oldest reservation leaves it, and the day's and
-- month's spend (this reservation included).
local now, ticket, tokens = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local rpm, tpm, window = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local most, lease, usd = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local daily, monthly = tonumber(ARGV[10]), tonumber(ARGV[11])
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
local day = tonumber(redis.call('GET', KEYS[5]) or '0')
local month = tonumber(redis.call('GET', KEYS[6]) or '0')
if daily > 0 and day + usd > daily then return {'daily_budget', num(day)} end
if monthly > 0 and month + usd > monthly then return {'monthly_budget', num(month)} end
if rpm > 0 or tpm > 0 then add(KEYS[1], KEYS[2], ticket, now, tokens, window) end
redis.call('ZADD', KEYS[3], num(now + lease), ticket)
redis.call('PEXPIRE', KEYS[3], math.ceil(lease * 1000))
redis.call('HSET', KEYS[4], ticket, num(usd) .. ' ' .. KEYS[5] .. ' ' .. KEYS[6])
redis.call('PEXPIRE', KEYS[4], math.ceil(lease * 1000))
day = redis.call('INCRBYFLOAT', KEYS[5], num(usd))
redis.call('PEXPIRE', KEYS[5], ARGV[12])
month = redis.call('INCRBYFLOAT', KEYS[6], num(usd))
redis.call('PEXPIRE', KEYS[6], ARGV[13])
if rpm <= 0 and tpm <= 0 then return {'', '0', 0, 0, '0', day, month} end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local frees = math.max(tonumber(oldest[2]) + window - now, 0)
local held = tonumber(redis.call('HGET', KEYS[2], '=sum') or '0')
return {'', '0', redis.call('ZCARD', KEYS[1]), held, num(frees), day, month}
"""
)

SETTLE = """
-- KEYS: t, run, held. ARGV: ticket, tokens (-1 keeps), usd ('' keeps).
-- Returns the day's and month's spend keys, each followed by its spend after settling
-- ({} when the ticket held none).
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
if held then
  redis.call('HDEL', KEYS[3], ticket)
  if ARGV[3] ~= '' then
    local reserved, day, month = string.match(held, '^(%S+) (%S+) (%S+)$')
    local change = string.format('%.9f', tonumber(ARGV[3]) - tonumber(reserved))
    if redis.call('EXISTS', day) == 1 then redis.call('INCRBYFLOAT', day, change) end
    if redis.call('EXISTS', month) == 1 then redis.call('INCRBYFLOAT', month, change) end
    return {day, redis.call('GET', day) or '0', month, redis.call('GET', month) or '0'}
  end
end
return {}
"""

REPLAY = (
    WINDOW_FUNCTIONS
    + """
-- One call a replica counted on its own while Redis was away, applied once.
-- KEYS: q, t, run, held, replayed, day spend, month spend.
-- ARGV: ticket, at, tokens, window (0: the key has none), usd, slot lease end (0: ended),
--       now, day ttl, month ttl.
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
  redis.call('INCRBYFLOAT', KEYS[6], change)
  redis.call('PEXPIRE', KEYS[6], ARGV[8])
  redis.call('INCRBYFLOAT', KEYS[7], change)
  redis.call('PEXPIRE', KEYS[7], ARGV[9])
end
redis.call('HSET', KEYS[5], ticket, usd)
redis.call('PEXPIRE', KEYS[5], ARGV[8])
if lease_end > now then
  redis.call('ZADD', KEYS[3], num(lease_end), ticket)
  redis.call('PEXPIRE', KEYS[3], math.ceil((lease_end - now) * 1000))
  redis.call('HSET', KEYS[4], ticket, usd .. ' ' .. KEYS[6] .. ' ' .. KEYS[7])
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

    def __init__(self, client: Redis, clock: TimeSource, *, prefix: str = "laneway") -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix
        self._reserve = client.register_script(RESERVE)
        self._settle = client.register_script(SETTLE)
        self._replay = client.register_script(REPLAY)
        self._batch = ScriptBatch(client)

    @classmethod
    def from_url(
        cls, url: str, clock: TimeSource, *, prefix: str = "laneway", timeout: float = 0.5
    ) -> RedisKeyLedger:
        """Connect lazily to ``url``; a call fails fast instead of retrying in the client."""
        return cls(fast_failing_client(url, timeout), clock, prefix=prefix)

    async def reserve(self, ask: KeyAsk) -> KeyRefusal | KeyGrant:
        """See ``KeyLedger.reserve``."""
        return (await self.reserve_reporting(ask))[0]

    async def reserve_reporting(self, ask: KeyAsk) -> tuple[KeyRefusal | KeyGrant, Spend | None]:
        """``reserve``, and on a grant the key's spend Redis now counts (same round trip)."""
        wall = self.clock.wall()
        day, month = periods(wall)
        keys = [*self._keys(ask.key, "q", "t", "run", "held"), *self._spend(ask.key, day, month)]
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
            repr(ask.daily or 0.0),
            repr(ask.monthly or 0.0),
            DAY_TTL_MS,
            MONTH_TTL_MS,
        ]
        limit, figure, *window = await self._batch.run(self._reserve, keys, args)
        if not limit:
            requests, tokens, frees_in, spent_day, spent_month = window
            spend = {day: float(spent_day), month: float(spent_month)}
            return KeyGrant(int(requests), int(tokens), float(frees_in)), spend
        return _refusal(ask, limit, float(figure), wall), None

    async def settle(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> None:
        """See ``KeyLedger.settle``."""
        await self.settle_reporting(ask, tokens, usd)

    async def settle_reporting(self, ask: KeyAsk, tokens: int | None, usd: float | None) -> Spend:
        """``settle``, and the key's spend Redis counts after it (empty: the call held none)."""
        args: list[str | int] = [
            ask.ticket,
            -1 if tokens is None else tokens,
            "" if usd is None else repr(usd),
        ]
        keys = self._keys(ask.key, "t", "run", "held")
        spent = await self._batch.run(self._settle, keys, args)
        pairs = zip(spent[::2], spent[1::2], strict=True)
        return {name.rpartition(":spend:")[2]: float(value) for name, value in pairs}

    async def replay(self, calls: Sequence[LocalCall]) -> None:
        """Apply calls counted in a replica's memory while Redis was away, in one pipeline.

        Each call is applied once however often this runs (see ``REPLAY``): a
        replay cut midway is simply run again.
        """
        now = self.clock.wall()
        async with self.client.pipeline(transaction=False) as pipe:
            for call in calls:
                ask = call.ask
                keys = [
                    *self._keys(ask.key, "q", "t", "run", "held", "replayed"),
                    *self._spend(ask.key, call.day, call.month),
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
                    DAY_TTL_MS,
                    MONTH_TTL_MS,
                ]
                await self._replay(keys=keys, args=args, client=pipe)
            await pipe.execute()

    async def heartbeat(self, replica: str, ttl: float) -> int:
        """Say ``replica`` serves keys; return how many did so within ``ttl`` seconds."""
        return await heartbeat(self.client, f"{self.prefix}:key-replicas", replica, self.clock, ttl)

    async def spent(self, key: str, period: str) -> float:
        """USD counted for ``key`` in ``period`` (a day or a month name), reservations included."""
        value = await self.client.get(self._keys(key, f"spend:{period}")[0])
        return float(value or 0.0)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()

    def _keys(self, key: str, *kinds: str) -> list[str]:
        return [f"{self.prefix}:key:{{{key}}}:{kind}" for kind in kinds]

    def _spend(self, key: str, day: str, month: str) -> list[str]:
        return self._keys(key, f"spend:{day}", f"spend:{month}")


def _refusal(ask: KeyAsk, limit: str, figure: float, wall: float) -> KeyRefusal:
    """The script's refusal as a ``KeyRefusal``: waits for windows, spend for budgets."""
    if limit == "max_concurrency":
        assert ask.max_concurrency is not None
        return KeyRefusal(limit, ask.max_concurrency, CONCURRENCY_WAIT)
    if limit in ("rpm", "tpm"):
        cap = ask.rpm if limit == "rpm" else ask.tpm
        assert cap is not None
        return KeyRefusal(limit, cap, figure)
    to_midnight, to_month = period_resets(wall)
    if limit == "daily_budget":
        assert ask.daily is not None
        return KeyRefusal(limit, ask.daily, to_midnight, figure)
    assert ask.monthly is not None
    return KeyRefusal(limit, ask.monthly, to_month, figure)
