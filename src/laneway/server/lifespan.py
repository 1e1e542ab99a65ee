"""``Lifecycle``: what the gateway starts with the server's loop and stops at shutdown.

At startup it starts the telemetry writer, the metrics snapshots (workers
only) and the key store's polling inside the server's loop, waits (bounded)
for the key store's first read, and freezes the heap startup built
(``freeze_startup_heap``). At shutdown (after uvicorn drained the calls in
flight) it flushes the writer for at most ``TELEMETRY_FLUSH_TIMEOUT``
seconds and writes a last snapshot, then closes the engine, the key ledger,
the admin API and the key store.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import TYPE_CHECKING

from laneway.engine.gateway import Engine
from laneway.metrics import Metrics
from laneway.server.asgi import Receive, Send
from laneway.server.limits import KeyLimits

if TYPE_CHECKING:
    from laneway.server.admin import AdminApi
    from laneway.server.stored_keys import StoredKeys
    from laneway.telemetry import TelemetryWriter

TELEMETRY_FLUSH_TIMEOUT = 5.0
"""Seconds the shutdown waits for queued telemetry; records still queued are dropped."""

log = logging.getLogger("laneway.server")


class Lifecycle:
    """Starts and stops what one gateway holds beyond its requests (see the module doc)."""

    def __init__(
        self,
        engine: Engine,
        *,
        metrics: Metrics | None,
        telemetry: TelemetryWriter | None,
        limits: KeyLimits | None,
        stored: StoredKeys | None,
        admin: AdminApi | None,
        snapshot_every: float,
    ) -> None:
        self.engine = engine
        self.snapshot_every = snapshot_every
        """Seconds between the snapshots workers share (``server.worker_snapshot_interval``)."""
        self.metrics = metrics
        self.telemetry = telemetry
        self.limits = limits
        self.stored = stored
        self.admin = admin
        self._sharing: asyncio.Task[None] | None = None

    async def lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol: start at startup; flush, then close at shutdown."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start()
                await self.opened()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    await self.flush()
                finally:
                    await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def start(self) -> None:
        """Start the telemetry writer and the metrics snapshots (in the server's loop)."""
        if self.telemetry is not None:
            self.telemetry.start()
        if self.metrics is not None and self.metrics.share is not None:
            self._sharing = asyncio.create_task(self.metrics.share_snapshots(self.snapshot_every))
        if self.stored is not None:
            self.stored.start()
        freeze_startup_heap()

    async def opened(self) -> None:
        """Wait for the first read of the key store (when there is one; bounded)."""
        if self.stored is not None:
            await self.stored.ready()

    async def flush(self) -> None:
        """At shutdown: the queued telemetry (bounded), then a last metrics snapshot."""
        await self._flush_telemetry()
        await self._last_snapshot()

    async def close(self) -> None:
        """Close the engine, the key ledger, and the key store (closing again is harmless)."""
        try:
            await self.engine.aclose()
        finally:
            if self.limits is not None:
                await self.limits.aclose()
            if self.admin is not None:
                await self.admin.aclose()
            if self.stored is not None:
                await self.stored.aclose()

    async def _last_snapshot(self) -> None:
        """Stop the snapshots and write the final figures, so the other workers count them."""
        if self._sharing is None:
            return
        self._sharing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sharing
        assert self.metrics is not None
        try:
            self.metrics.write_snapshot()
        except OSError as exc:
            log.warning("last metrics snapshot not written: %s", exc)

    async def _flush_telemetry(self) -> None:
        if self.telemetry is None:
            return
        stats = await self.telemetry.aclose(TELEMETRY_FLUSH_TIMEOUT)
        if stats.dropped or stats.failed:
            log.warning(
                "telemetry at shutdown: %d rows written, %d dropped, %d lost to failed writes",
                stats.written,
                stats.dropped,
                stats.failed,
            )


def freeze_startup_heap() -> None:
    """Move everything startup built out of the collector's sight (``gc.freeze``).

    Imports, config models and the engine are a few hundred thousand objects
    that live as long as the process; every full collection walked them all,
    a pause of tens of milliseconds that showed up as the p99 under load.
    Garbage already made is collected first, so nothing collectable is frozen.
    """
    gc.collect()
    gc.freeze()
