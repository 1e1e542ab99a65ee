"""``cache.url`` to a backend: SQLite beside the config, in memory, or Redis."""

from __future__ import annotations

from pathlib import Path

from laneway.cache import RedisCacheStore, SqliteCacheStore, open_cache


def test_default_is_a_file_beside_the_config_or_memory_without_one(tmp_path: Path) -> None:
    beside = open_cache(None, tmp_path)
    assert isinstance(beside, SqliteCacheStore)
    assert beside.path == str(tmp_path / "laneway-cache.sqlite3")
    memory = open_cache(None, None)
    assert isinstance(memory, SqliteCacheStore) and memory.path == ":memory:"


def test_paths_are_taken_from_the_config_folder(tmp_path: Path) -> None:
    relative = open_cache("data/c.sqlite3", tmp_path)
    assert isinstance(relative, SqliteCacheStore)
    assert relative.path == str(tmp_path / "data" / "c.sqlite3")
    url = open_cache("sqlite:///var/lib/c.sqlite3", tmp_path)
    assert isinstance(url, SqliteCacheStore) and url.path == "/var/lib/c.sqlite3"
    memory = open_cache(":memory:", tmp_path)
    assert isinstance(memory, SqliteCacheStore) and memory.path == ":memory:"


async def test_redis_urls_select_redis() -> None:
    store = open_cache("redis://127.0.0.1:6379/3", None)
    assert isinstance(store, RedisCacheStore)
    await store.aclose()
