"""``ReloadingGateway``: one ASGI app over successive configs, swapped without a dropped call.

Each config is a ``Generation``: a ``Gateway`` over its own engine, and the
connections it holds (transport, state store, cache, key ledger), some of
which the next generation may share. A request runs start to end on the
generation that was current when it arrived (a stream included, since the
ASGI call lasts as long as the stream), so ``swap`` changes what new requests
get, at once, and lets the old generation drain: its connections that the
new one does not share are closed when its last call ends, or after
``drain_timeout`` when a call outlasts it.

The telemetry writer and the metrics belong to the process, not to a config:
the first gateway starts them at startup and flushes them at shutdown, and
every generation shares them (so counters never restart at a reload).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from laneway.core.units import format_duration
from laneway.server.app import Gateway
from laneway.server.asgi import Receive, Scope, Send

log = logging.getLogger("laneway.reload")


class Closable(Protocol):
    """A connection holder a generation uses (transport, store, cache, ledger)."""

    def aclose(self) -> Awaitable[object]: ...


@dataclass(eq=False, slots=True)
class Generation:
    """One config's gateway, the connections it uses, and its calls in flight."""

    gateway: Gateway
    uses: Sequence[Closable]
    in_flight: int = 0
    drained: asyncio.Event = field(default_factory=asyncio.Event)

    def left(self) -> None:
        """One call ended; wake the retirement when it was the last."""
        self.in_flight -= 1
        if self.in_flight == 0:
            self.drained.set()


class ReloadingGateway:
    """Serves ``current``'s gateway; ``swap`` installs the next and retires the old one.

    ``on_startup`` runs in the server's loop once started (``laneway serve``
    installs its SIGHUP handler there).
    """

    def __init__(
        self, first: Generation, on_startup: Callable[[ReloadingGateway], None] | None = None
    ) -> None:
        self.current = first
        self._starter = first.gateway
        self._on_startup = on_startup
        self._live: list[Generation] = [first]
        self._retiring: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point: a request on the current generation, or the lifespan."""
        if scope["type"] == "http":
            generation = self.current
            generation.in_flight += 1
            try:
                await generation.gateway(scope, receive, send)
            finally:
                generation.left()
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    def swap(self, new: Generation, drain_timeout: float) -> None:
        """Serve ``new`` from now on; close what only the old generation used once it drains."""
        old, self.current = self.current, new
        self._live.append(new)
        task = asyncio.create_task(self._retire(old, drain_timeout))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    @property
    def draining(self) -> int:
        """Calls still running on configs no longer current."""
        return sum(g.in_flight for g in self._live if g is not self.current)

    async def _retire(self, old: Generation, drain_timeout: float) -> None:
        old.drained.clear()  # set whenever it was idle before: only the drain from now counts
        if old.in_flight:
            try:
                async with asyncio.timeout(drain_timeout):
                    await old.drained.wait()
            except TimeoutError:
                log.warning(
                    "%d call(s) still running on the previous config after drain_timeout %s; "
                    "closing its upstream connections",
                    old.in_flight,
                    format_duration(drain_timeout),
                )
        self._live.remove(old)
        await _close(self._unused(old.uses))

    def _unused(self, resources: Sequence[Closable]) -> list[Closable]:
        """The ``resources`` no live generation uses (compared by identity)."""
        used = {id(r) for g in self._live for r in g.uses}
        return [r for r in resources if id(r) not in used]

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._starter.start()
                await self._starter.opened()
                if self._on_startup is not None:
                    self._on_startup(self)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    await self._starter.flush()
                finally:
                    await self._close_all()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _close_all(self) -> None:
        """Stop waiting for old configs to drain (the server drained) and close everything."""
        for task in list(self._retiring):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        resources = {id(r): r for g in self._live for r in g.uses}
        self._live.clear()
        await _close(list(resources.values()))


async def _close(resources: Sequence[Closable]) -> None:
    """Close each of ``resources``; one failing does not keep the others open."""
    for resource in resources:
        try:
            await resource.aclose()
        except Exception:
            log.exception("closing %s after a reload failed", type(resource).__name__)
