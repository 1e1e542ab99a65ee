"""Whether this process can write the files its config keeps: checked before ``serve`` starts.

A SQLite file needs its folder writable too (WAL mode creates ``-wal`` and
``-shm`` files beside it), and a folder that does not exist yet needs its
nearest existing parent writable. Run as a user who cannot write the config's
folder (a root-owned ``/etc/laneway`` under systemd's ``User=``), telemetry
and the cache were lost call after call with no word at start.
"""

from __future__ import annotations

import os
from pathlib import Path

from laneway.cache.factory import sqlite_cache_path
from laneway.config.models import ChatLaneConfig, LanewayConfig, OcrLaneConfig
from laneway.telemetry import SqliteTelemetryStore, store_for_url

HINT = (
    "give the folder to the user serving, or point the setting at a writable path "
    "(under systemd: StateDirectory=laneway, docs/deploy.md)"
)


def unwritable(config: LanewayConfig, base_dir: Path) -> list[str]:
    """What of telemetry, its spool and the response cache this user cannot write, with why."""
    wanted: list[tuple[Path, str, str]] = []
    store = store_for_url(config.telemetry.url, base_dir)
    if isinstance(store, SqliteTelemetryStore):
        wanted.append((store.path, "telemetry", "telemetry.url"))
    if store is not None and config.telemetry.spool_bytes:
        folder = base_dir / (config.telemetry.spool_dir or ".")
        wanted.append(
            (folder / "laneway-telemetry.spool", "the telemetry spool", "telemetry.spool_dir")
        )
    lanes = config.lanes.values()
    cached = [lane for lane in lanes if isinstance(lane, ChatLaneConfig | OcrLaneConfig)]
    if any(lane.cache is not None for lane in cached):
        cache = sqlite_cache_path(config.cache.url, base_dir)
        if cache is not None:
            wanted.append((cache, "the response cache", "cache.url"))
    problems = []
    for path, what, setting in wanted:
        reason = why_unwritable(path)
        if reason is not None:
            problems.append(f"{what} cannot be written: {reason} ({setting}); {HINT}")
    return problems


def why_unwritable(path: Path) -> str | None:
    """Why a file at ``path`` (and its SQLite side files) cannot be written, or ``None``."""
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable by uid {os.getuid()}"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable by uid {os.getuid()}"
    return None
