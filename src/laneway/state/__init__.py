"""State layer: what laneway replicas share, in two sub-packages that never import each other.

- ``laneway.state.admission``: source admission's quota windows, outcome
  logs and probe leases (``SourceStore``: in the process, or in Redis with a
  local fallback).
- ``laneway.state.keys``: callers' keys as data (the key store: keys, teams,
  digests, audit) and every key's limits and spend (the key ledger).

What both use sits beside them: the sliding window (``window``,
``window_lua``), Redis clients and heartbeats (``redis_client``), script
batching (``batching``) and the outage behaviour (``outage``). An adapter
beside ``config``, ``providers`` and ``http``: admission depends on
``laneway.core`` only; the key ledger reads the budget rules of
``laneway.policy.budget`` (what a budget allows, and its periods) and holds
no other policy.

This package keeps admission's names (``open_store``, ``MemoryStore``, ...)
for the code that imports them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.lazy import lazy_attributes
from laneway.core.outcomes import Mark, SourceRecord
from laneway.state.admission import open_store
from laneway.state.admission.base import (
    Admission,
    Ask,
    Peek,
    QuotaUse,
    Refusal,
    SourceDump,
    SourceStore,
)
from laneway.state.admission.memory import MemoryStore

if TYPE_CHECKING:
    from laneway.state.admission.fallback import FallbackStore
    from laneway.state.admission.redis_store import RedisStore

_LAZY = {
    "RedisStore": "laneway.state.admission.redis_store",
    "FallbackStore": "laneway.state.admission.fallback",
}

__all__ = [
    "Admission",
    "Ask",
    "FallbackStore",
    "Mark",
    "MemoryStore",
    "Peek",
    "QuotaUse",
    "RedisStore",
    "Refusal",
    "SourceDump",
    "SourceRecord",
    "SourceStore",
    "open_store",
]

__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import heavy adapters on first use: ``laneway serve`` should not pay for unused drivers."""
