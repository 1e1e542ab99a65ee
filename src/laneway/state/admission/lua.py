"""The Redis store's scripts: each runs atomically inside Redis, in one round trip.

They follow ``laneway.state.window.SlidingWindow`` and ``MemoryStore`` step
for step. Per source (hash-tagged by scope: a lane, or the scope of every
lane naming deployments, so one admission's keys share a cluster slot):
``q`` a sorted set of reservation tickets scored by time, ``t`` a hash
of ticket -> tokens plus their sum under ``=sum``, ``log`` a list of
``"<time> <code>"`` outcomes (newest first), ``logged`` how many outcomes were
ever pushed to ``log`` (counted from the microsecond it was created, so a
log that expired and started again never repeats a number), ``ok`` the last
success time, ``probe`` the half-open lease ``"<ticket> <until>"``. Times are the callers'
wall-clock seconds, passed in, so every replica reads one timeline. Keys
expire on their own when a source goes idle: nothing is left behind.
"""

from __future__ import annotations

from laneway.state.window_lua import WINDOW_FUNCTIONS

_COMMON = (
    WINDOW_FUNCTIONS
    + """
local function free_probe(key, ticket)
  local held = redis.call('GET', key)
  if held and string.sub(held, 1, #ticket + 1) == ticket .. ' ' then
    redis.call('DEL', key)
  end
end

local function record(log, ok)
  return {redis.call('LRANGE', log, 0, -1), redis.call('GET', ok) or ''}
end

local function count_logged(logged, added, ttl, now)
  if redis.call('EXISTS', logged) == 0 then
    redis.call('SET', logged, string.format('%.0f', math.floor(now * 1000000)))
  end
  redis.call('INCRBY', logged, added)
  redis.call('PEXPIRE', logged, ttl)
end

-- A source's record for a caller that holds its log up to outcome number `known`
-- (0: nothing): {logged, last ok, marks newest first, whole}. Only the marks it
-- lacks (whole = 0) when that is at most `size`, else the whole log (whole = 1).
local function record_since(log, ok, logged, known, size)
  local count = tonumber(redis.call('GET', logged) or '0')
  local last_ok = redis.call('GET', ok) or ''
  local fresh = count - known
  if known <= 0 or fresh < 0 or fresh > size then
    return {count, last_ok, redis.call('LRANGE', log, 0, -1), 1}
  end
  if fresh == 0 then return {count, last_ok, {}, 0} end
  return {count, last_ok, redis.call('LRANGE', log, 0, fresh - 1), 0}
end
"""
)

ADMIT = (
    _COMMON
    + """
-- KEYS: log, ok, logged per source of the lane; then q, t (its quota's), probe per ask.
-- ARGV: now, source count, log size; the outcome number each source's log is known
-- up to; then per ask: ticket, tokens, rpm, tpm, window, probe.
local now = tonumber(ARGV[1])
local sources, size = tonumber(ARGV[2]), tonumber(ARGV[3])
local granted = 0
local refusals = {}
for j = 1, (#ARGV - 3 - sources) / 6 do
  local a = 3 + sources + (j - 1) * 6
  local k = 3 * sources + (j - 1) * 3
  local q, t, probe_key = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local ticket, tokens = ARGV[a + 1], tonumber(ARGV[a + 2])
  local rpm, tpm, window = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local probe = tonumber(ARGV[a + 6])
  local wait, reason = 0, 'probe'
  if probe > 0 then
    local held = redis.call('GET', probe_key)
    if held then wait = math.max(tonumber(string.match(held, ' (.+)$')) - now, 0) end
  end
  if wait <= 0 and (rpm > 0 or tpm > 0) then
    reason = 'quota'
    expire(q, t, window, now)
    if tpm > 0 then tokens = math.min(tokens, tpm) end
    wait = math.max(rpm_wait(q, rpm, window, now), tpm_wait(q, t, tokens, tpm, window, now))
    if wait <= 0 then add(q, t, ticket, now, tokens, window) end
  end
  if wait <= 0 then
    if probe > 0 then
      local lease = ticket .. ' ' .. num(now + probe)
      redis.call('SET', probe_key, lease, 'PX', math.ceil(probe * 1000) + 1000)
    end
    granted = j
    break
  end
  refusals[#refusals + 1] = num(wait)
  refusals[#refusals + 1] = reason
end
local records = {}
for i = 1, sources do
  local k = 3 * (i - 1)
  records[i] = record_since(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], tonumber(ARGV[3 + i]), size)
end
return {granted, refusals, records}
"""
)

SETTLE = (
    _COMMON
    + """
-- KEYS: q, t, probe, log, ok, logged. ARGV: now, ticket, tokens (-1 keeps), code ('' none),
-- log size, log ttl (ms), the outcome number the caller knows the log up to.
local now, ticket, tokens, code = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
if tokens >= 0 then
  local old = redis.call('HGET', KEYS[2], ticket)
  if old then
    redis.call('HSET', KEYS[2], ticket, tokens)
    redis.call('HINCRBY', KEYS[2], '=sum', tokens - tonumber(old))
  end
end
free_probe(KEYS[3], ticket)
if code ~= '' then
  redis.call('LPUSH', KEYS[4], num(now) .. ' ' .. code)
  redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[5]) - 1)
  redis.call('PEXPIRE', KEYS[4], ARGV[6])
  if code == 'ok' then redis.call('SET', KEYS[5], num(now), 'PX', ARGV[6]) end
  count_logged(KEYS[6], 1, ARGV[6], now)
end
return record_since(KEYS[4], KEYS[5], KEYS[6], tonumber(ARGV[7]), tonumber(ARGV[5]))
"""
)

RELEASE = (
    _COMMON
    + """
-- KEYS: q, t, probe. ARGV: ticket.
drop(KEYS[1], KEYS[2], ARGV[1])
free_probe(KEYS[3], ARGV[1])
return 1
"""
)

MERGE = (
    _COMMON
    + """
-- KEYS: q, t, log, ok, logged. ARGV: now, window, log size, log ttl (ms), entry count,
-- then ticket, at, tokens per entry, then "<at> <code>" marks oldest first, last ok ('' none).
local now, window, size = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl, count = ARGV[4], tonumber(ARGV[5])
for i = 0, count - 1 do
  local ticket = ARGV[6 + 3 * i]
  if not redis.call('ZSCORE', KEYS[1], ticket) then
    add(KEYS[1], KEYS[2], ticket, tonumber(ARGV[7 + 3 * i]), tonumber(ARGV[8 + 3 * i]), window)
  end
end
for i = 6 + 3 * count, #ARGV - 1 do redis.call('LPUSH', KEYS[3], ARGV[i]) end
local pushed = #ARGV - 1 - (6 + 3 * count) + 1
if pushed > 0 then
  redis.call('LTRIM', KEYS[3], 0, size - 1)
  redis.call('PEXPIRE', KEYS[3], ttl)
  count_logged(KEYS[5], pushed, ttl, now)
end
local last_ok = tonumber(ARGV[#ARGV])
if last_ok and last_ok > tonumber(redis.call('GET', KEYS[4]) or '0') then
  redis.call('SET', KEYS[4], num(last_ok), 'PX', ttl)
end
return 1
"""
)

PEEK = (
    _COMMON
    + """
-- Reads only. KEYS: log, ok per source; then q, t per quota. ARGV: now, source count,
-- then each quota's window. Returns the sources' records and {requests, tokens} per quota.
local now, sources = tonumber(ARGV[1]), tonumber(ARGV[2])
local records, quotas = {}, {}
for i = 1, sources do records[i] = record(KEYS[2 * i - 1], KEYS[2 * i]) end
for j = 1, #ARGV - 2 do
  local q, t = KEYS[2 * sources + 2 * j - 1], KEYS[2 * sources + 2 * j]
  local tickets = redis.call('ZRANGEBYSCORE', q, '(' .. num(now - tonumber(ARGV[2 + j])), '+inf')
  local tokens = 0
  if #tickets > 0 then
    for _, held in ipairs(redis.call('HMGET', t, unpack(tickets))) do
      tokens = tokens + (tonumber(held) or 0)
    end
  end
  quotas[j] = {#tickets, tokens}
end
return {records, quotas}
"""
)
