"""``SpoolKeeper``: the telemetry writer's spool file, and each way it can lose rows.

The writer hands it batches the database refused (or that must follow the
spool to keep their order) and asks it for the spool's head; every file
operation runs in a worker thread, off the event loop. A spool that is full
drops rows, and a file system that refuses the spool loses them: both are
counted as drops in the writer's ``WriterStats`` and said once in the log,
then again only after the spool recovered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from laneway.telemetry.spool import Batch, Spool

log = logging.getLogger("laneway.telemetry")

T = TypeVar("T")


@dataclass(slots=True)
class WriterStats:
    """What happened to the records the writer was given.

    ``failed`` counts rows lost to failed writes (only without a spool);
    ``failed_batches`` every write the database refused or did not finish.
    """

    written: int = 0
    dropped: int = 0
    failed: int = 0
    failed_batches: int = 0


class SpoolKeeper:
    """Appends batches to ``spool`` and reads it, counting what is lost in ``stats``."""

    def __init__(self, spool: Spool, stats: WriterStats) -> None:
        self.spool = spool
        self.stats = stats
        self._full = False
        self._broken = False

    async def io(self, operation: Callable[..., T], *args: Any) -> T | None:
        """Run a spool operation in a worker thread; ``None`` when the file system refused it."""
        try:
            return await asyncio.to_thread(operation, *args)
        except OSError as exc:
            self._refused(exc)
            return None

    async def append(self, batches: list[Batch]) -> None:
        """Keep ``batches`` in the spool; rows past a full spool are dropped and counted."""
        dropped = await self.io(self.spool.append, batches)
        if dropped is None:  # the file system refused it: said by _refused, not "full"
            self.stats.dropped += sum(len(rows) for _, rows in batches)
            return
        self._broken = False
        if dropped:
            self.stats.dropped += dropped
            if not self._full:
                log.warning(
                    "telemetry spool %s is full (%d bytes): %d rows dropped",
                    self.spool.path,
                    self.spool.max_bytes,
                    dropped,
                )
                self._full = True

    def append_now(self, batches: list[Batch]) -> int:
        """Keep ``batches`` at shutdown, in this thread (the loop has nothing else to do);
        the rows dropped (a full spool, or one the file system refused)."""
        try:
            return self.spool.append(batches)
        except OSError as exc:
            self._refused(exc)
            return sum(len(rows) for _, rows in batches)

    def emptied(self) -> None:
        """Say that the spool was written back: writes go to the database again."""
        self._full = False
        log.warning("telemetry: the spool is written; writes go to the database again")

    def _refused(self, exc: OSError) -> None:
        if not self._broken:
            log.error(
                "telemetry spool %s cannot be written (%s): rows it should keep are dropped",
                self.spool.path,
                exc.strerror or exc,
            )
            self._broken = True
