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
    if url is None:
        return SqliteCacheStore(MEMORY if base_dir is None else base_dir / DEFAULT_FILE)
    scheme = urlsplit(url).scheme
    if scheme in REDIS_SCHEMES:
        require("redis", "cache.url (Redis)")
        from laneway.cache.redis_cache import RedisCacheStore

        return RedisCacheStore.from_url(url)
    if url == MEMORY:
        return SqliteCacheStore(MEMORY)
    path = Path(url.removeprefix("sqlite://")) if scheme == "sqlite" else Path(url)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return SqliteCacheStore(path)
