"""From ``cache.url`` to a store: a SQLite path, ``:memory:``, or a Redis URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from laneway.cache.port import CacheStore
from laneway.cache.sqlite import MEMORY, SqliteCacheStore
from laneway.core.extras import require

DEFAULT_FILE = "laneway-cache.sqlite3"
REDIS_SCHEMES = frozenset({"redis", "rediss", "unix"})


def open_cache(url: str | None, base_dir: Path | None) -> CacheStore:
    """The store ``url`` names (connections open on first use).

    ``redis://``, ``rediss://`` or ``unix://`` selects Redis. ``sqlite:///path``
    or a bare path selects SQLite; a relative path starts at ``base_dir``
    (the config file's folder), else at the working directory. With no
    ``url`` the cache is ``laneway-cache.sqlite3`` beside the config file,
    or, when the config came from no file (``base_dir`` is ``None``), a
    private in-memory SQLite database.
    """
    if url is not None and urlsplit(url).scheme in REDIS_SCHEMES:
        require("redis", "cache.url (Redis)")
        from laneway.cache.redis_cache import RedisCacheStore

        return RedisCacheStore.from_url(url)
    path = sqlite_cache_path(url, base_dir)
    return SqliteCacheStore(MEMORY if path is None else path)


def sqlite_cache_path(url: str | None, base_dir: Path | None) -> Path | None:
    """The SQLite file ``url`` names (see ``open_cache``), or ``None`` when the cache is kept
    in memory or on Redis: what ``laneway serve`` checks it can write, without opening it."""
    if url is None:
        return None if base_dir is None else base_dir / DEFAULT_FILE
    scheme = urlsplit(url).scheme
    if scheme in REDIS_SCHEMES or url == MEMORY:
        return None
    path = Path(url.removeprefix("sqlite://")) if scheme == "sqlite" else Path(url)
    if str(path) == MEMORY:
        return None
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path
