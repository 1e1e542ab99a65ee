"""Callers' keys as data, and every key's limits and spend.

- The key store (``records``, ``store``, ``databases``): stored keys, teams,
  their sha256 digests and the admin audit, in SQLite or PostgreSQL; the
  truth every replica reloads from.
- The key ledger (``ledger``, the port; ``memory``, ``redis_ledger``,
  ``fallback``): each key's request and token windows, running calls and
  spend per budget period, in the process or shared through Redis.

Budget rules (periods, what a budget allows) are ``laneway.policy.budget``.
"""

from __future__ import annotations

from laneway.core.clock import TimeSource
from laneway.state.keys.ledger import KeyLedger
from laneway.state.keys.memory import MemoryKeyLedger


def open_key_ledger(
    url: str | None,
    clock: TimeSource,
    *,
    prefix: str = "laneway",
    fallback_share: float | None = None,
    timeout: float = 0.5,
) -> KeyLedger:
    """The ledger for ``state.url``: in-process without one, Redis (with fallback) with one.

    ``fallback_share`` is ``state.fallback_share`` (see ``FallbackKeyLedger``); ``timeout``
    is ``state.timeout``, the bound of each Redis call.
    """
    if url is None:
        return MemoryKeyLedger(clock)
    from laneway.state.keys.fallback import FallbackKeyLedger
    from laneway.state.keys.redis_ledger import RedisKeyLedger

    shared = RedisKeyLedger.from_url(url, clock, prefix=prefix, timeout=timeout)
    return FallbackKeyLedger(shared, clock, timeout=timeout, fallback_share=fallback_share)
