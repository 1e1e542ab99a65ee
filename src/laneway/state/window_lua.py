"""The sliding window's Lua helpers, for every script that keeps a request/token window.

They follow ``laneway.state.window.SlidingWindow`` step for step. A window is
two Redis keys: ``q`` a sorted set of reservation tickets scored by time, and
``t`` a hash of ticket -> tokens plus their sum under ``=sum``. Source
admission's scripts (``laneway.state.admission.lua``) and per-key limits'
(``laneway.state.keys.redis_ledger``) both start with these.
"""

from __future__ import annotations

WINDOW_FUNCTIONS = """
-- Lua prints -0 as "-0", which HINCRBY refuses: write negations as 0 - x.
local function num(x) return string.format('%.6f', x) end

local function expire(q, t, window, now)
  local old = redis.call('ZRANGEBYSCORE', q, '-inf', num(now - window))
  for _, ticket in ipairs(old) do
    local tokens = tonumber(redis.call('HGET', t, ticket) or '0')
    redis.call('HDEL', t, ticket)
    redis.call('HINCRBY', t, '=sum', 0 - tokens)
    redis.call('ZREM', q, ticket)
  end
end

local function rpm_wait(q, rpm, window, now)
  if rpm <= 0 then return 0 end
  local count = redis.call('ZCARD', q)
  if count < rpm then return 0 end
  local frees = redis.call('ZRANGE', q, count - rpm, count - rpm, 'WITHSCORES')
  return tonumber(frees[2]) + window - now
end

local function tpm_wait(q, t, tokens, tpm, window, now)
  if tpm <= 0 then return 0 end
  local excess = tonumber(redis.call('HGET', t, '=sum') or '0') + tokens - tpm
  if excess <= 0 then return 0 end
  local entries = redis.call('ZRANGE', q, 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    excess = excess - tonumber(redis.call('HGET', t, entries[i]) or '0')
    if excess <= 0 then return tonumber(entries[i + 1]) + window - now end
  end
  return 0
end

local function add(q, t, ticket, at, tokens, window)
  redis.call('ZADD', q, num(at), ticket)
  redis.call('HSET', t, ticket, tokens)
  redis.call('HINCRBY', t, '=sum', tokens)
  local ttl = math.ceil(window * 1000) + 1000
  redis.call('PEXPIRE', q, ttl)
  redis.call('PEXPIRE', t, ttl)
end

local function drop(q, t, ticket)
  local old = redis.call('HGET', t, ticket)
  if old then
    redis.call('HDEL', t, ticket)
    redis.call('HINCRBY', t, '=sum', 0 - tonumber(old))
    redis.call('ZREM', q, ticket)
  end
end
"""
