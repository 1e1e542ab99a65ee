"""``SqliteCacheStore``: cache entries in a SQLite file (stdlib ``sqlite3``) on one thread.

``sqlite3`` blocks, so every statement runs on a single dedicated thread
that owns the connection, opened on first use; the event loop only awaits a
future. WAL mode lets several gateway workers share one file. Expired rows
are invisible to reads at once and deleted on the next write, so the file
does not grow with dead entries. ``sqlite3`` itself is imported on that
thread at first use: a gateway whose caches never run does not load SQLite.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from laneway.core.errors import CacheUnavailable

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")
MEMORY = ":memory:"
KEYS_PER_QUERY = 500
"""Keys per ``IN (...)`` lookup, below SQLite's bound-parameter limit."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS laneway_cache "
    "(key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS laneway_cache_expires ON laneway_cache (expires) "
    "WHERE expires IS NOT NULL",
)


class SqliteCacheStore:
    """Cache entries in ``path`` (``":memory:"`` for a private in-process store).

    ``wall`` is the clock expiry is measured on (Unix seconds, so entries
    outlive a restart correctly).
    """

    def __init__(self, path: str | Path, *, wall: Callable[[], float] = time.time) -> None:
        self.path = str(path)
        self._wall = wall
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """See ``CacheStore.get_many``."""
        if not keys:
            return []
        now = self._wall()
        found = await self._run(lambda db: _select(db, keys, now))
        return [found.get(key) for key in keys]

    async def put_many(self, items: Mapping[str, bytes], ttl: float | None) -> None:
        """See ``CacheStore.put_many``."""
        if not items:
            return
        now = self._wall()
        expires = None if ttl is None else now + ttl
        rows = [(key, value, expires) for key, value in items.items()]
        await self._run(lambda db: _insert(db, rows, now))

    async def aclose(self) -> None:
        """Close the connection and let the worker thread go."""
        if self._executor is None:
            return
        if self._conn is not None:
            await self._run(lambda db: db.close())
            self._conn = None
        self._executor.shutdown(wait=False)
        self._executor = None

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="laneway-cache")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._work, work)

    def _work(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the worker thread; SQLite and file errors become ``CacheUnavailable``."""
        import sqlite3

        try:
            return work(self._db())
        except (sqlite3.Error, OSError) as exc:
            raise CacheUnavailable(f"SQLite cache {self.path}: {exc}") from exc

    def _db(self) -> sqlite3.Connection:
        """The connection, opened (and the schema made) on the worker thread."""
        if self._conn is None:
            import sqlite3

            if self.path != MEMORY:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=5.0)
            if self.path != MEMORY:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            with conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
            self._conn = conn
        return self._conn


def _select(db: sqlite3.Connection, keys: Sequence[str], now: float) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for start in range(0, len(keys), KEYS_PER_QUERY):
        part = keys[start : start + KEYS_PER_QUERY]
        marks = ", ".join("?" * len(part))
        sql = (
            f"SELECT key, value FROM laneway_cache WHERE key IN ({marks}) "
            "AND (expires IS NULL OR expires > ?)"
        )
        found.update(db.execute(sql, (*part, now)).fetchall())
    return found


def _insert(
    db: sqlite3.Connection, rows: list[tuple[str, bytes, float | None]], now: float
) -> None:
    with db:
        db.executemany("INSERT OR REPLACE INTO laneway_cache VALUES (?, ?, ?)", rows)
        db.execute("DELETE FROM laneway_cache WHERE expires IS NOT NULL AND expires <= ?", (now,))
