"""Cache layer: the stores behind the embedding and chat response caches.

An adapter beside ``telemetry`` and ``state``: it depends on ``laneway.core``
only and holds no policy (what is cacheable, under which key, for how long
is decided in ``laneway.engine``). ``open_cache(url, base_dir)`` picks the
backend; ``GuardedCache`` makes a backend's failures read as misses;
``NoCache`` keeps nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laneway.cache.absent import NoCache
from laneway.cache.factory import open_cache
from laneway.cache.guard import GuardedCache
from laneway.cache.port import CacheStore
from laneway.cache.sqlite import SqliteCacheStore
from laneway.core.errors import CacheUnavailable
from laneway.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from laneway.cache.redis_cache import RedisCacheStore

_LAZY = {"RedisCacheStore": "laneway.cache.redis_cache"}

__all__ = [
    "CacheStore",
    "CacheUnavailable",
    "GuardedCache",
    "NoCache",
    "RedisCacheStore",
    "SqliteCacheStore",
    "open_cache",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
"""Import heavy adapters on first use: ``laneway serve`` should not pay for unused drivers."""
