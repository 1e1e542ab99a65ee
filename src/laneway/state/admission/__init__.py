"""Source admission's shared state: quota windows, outcome logs and probe leases.

It keeps, per scope and source, a sliding quota window of reservations, a
short log of attempt outcomes, the time of the last success and the
half-open probe lease; the policies read those to decide. A scope is a lane,
or the one scope of every lane naming deployments (a deployment is one
source in it, whichever lane asks); an ask's quota window may be another
name's (a quota group several sources share).

``open_store(None, clock)`` keeps everything in the process;
``open_store("redis://...", clock)`` shares it through Redis and falls back to
process-local state while Redis is unreachable.
"""

from __future__ import annotations

from laneway.core.clock import TimeSource
from laneway.core.extras import require
from laneway.state.admission.base import SourceStore
from laneway.state.admission.memory import MemoryStore


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
    from laneway.state.admission.fallback import FallbackStore
    from laneway.state.admission.redis_store import RedisStore

    shared = RedisStore.from_url(url, clock, timeout=timeout)
    local = MemoryStore(clock)
    return FallbackStore(shared, local, clock, timeout=timeout, fallback_share=fallback_share)
