"""State layer: what source admission shares between laneway replicas.

An adapter beside ``config``, ``providers`` and ``http``: it depends on
``laneway.core`` only (never on ``laneway.policy``) and holds no policy. It
keeps, per scope and source, a sliding quota window of reservations, a short
log of attempt outcomes, the time of the last success and the half-open
probe lease; the policies read those to decide. A scope is a lane, or the
one scope of every lane naming deployments (a deployment is one source in
it, whichever lane asks); an ask's quota window may be another name's (a
quota group several sources share).

``open_store(None, clock)`` keeps everything in the process;
``open_store("redis://...", clock)`` shares it through Redis and falls back to
process-local state while Redis is unreachable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.core.clock import TimeSource
from laneway.core.extras import require
from laneway.core.lazy import lazy_attributes
from laneway.core.outcomes import Mark, SourceRecord
from laneway.state.base import (
    Admission,
    Ask,
    Peek,
    QuotaUse,
    Refusal,
    SourceDump,
    SourceStore,
)
from laneway.state.memory import MemoryStore

if TYPE_CHECKING:
    from laneway.state.fallback import FallbackStore
    from laneway.state.redis_store import RedisStore

_LAZY = {"RedisStore": "laneway.state.redis_store", "FallbackStore": "laneway.state.fallback"}

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


def open_store(
    url: str | None,
    clock: TimeSource,
    fallback_share: float | None = None,
    timeout: float = 0.5,
) -> SourceStore:
    """The store for ``state.url``: in-process without one, Redis (with fallback) with one.

    ``fallback_share`` is ``state.fallback_share`` (see ``FallbackStore``); ``timeout``
    is ``state.timeout``, the bound of each Redis call.
    """
    if url is None:
        return MemoryStore(clock)
    require("redis", "state.url (Redis)")
    from laneway.state.fallback import FallbackStore
    from laneway.state.redis_store import RedisStore

    shared = RedisStore.from_url(url, clock, timeout=timeout)
    local = MemoryStore(clock)
    return FallbackStore(shared, local, clock, timeout=timeout, fallback_share=fallback_share)


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import heavy adapters on first use: ``laneway serve`` should not pay for unused drivers."""
