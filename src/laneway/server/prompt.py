"""``PromptServer``: uvicorn that begins its drain as soon as it is told to stop.

uvicorn looks at its exit flag every 0.1 s, and at shutdown sleeps a fixed
0.1 s after asking idle connections to close, then polls every 0.1 s until
connections and their tasks are done: about 0.2 s of idle waiting on every
stop, restart and deploy of ``laneway serve``. Here SIGTERM, SIGINT or
``stop()`` wakes the main loop at once and the drain is polled every
``DRAIN_POLL_SECONDS``. The shutdown steps, their order and the graceful
timeout (``server.drain_timeout``) are uvicorn's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from types import FrameType

import uvicorn

DRAIN_POLL_SECONDS = 0.005
"""How often a stopping server looks whether its connections and their tasks are done."""
TICK_SECONDS = 0.1
"""uvicorn's main-loop tick (its ``Date`` header is refreshed every tenth)."""

log = logging.getLogger("uvicorn.error")


class PromptServer(uvicorn.Server):
    """uvicorn whose stop (a signal or ``stop()``) wakes its main loop (see the module doc)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken = asyncio.Event()

    def stop(self) -> None:
        """Ask the server to exit and wake its main loop (from any thread)."""
        self.should_exit = True
        self._wake()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's SIGTERM and SIGINT handler, which also wakes the main loop."""
        super().handle_exit(sig, frame)
        self._wake()

    def _wake(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._woken.set)

    async def main_loop(self) -> None:
        """uvicorn's tick, ended early by a stop."""
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), TICK_SECONDS)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown without its fixed pause: stop accepting, drain, end the lifespan."""
        log.info("Shutting down")
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._drain(), self.config.timeout_graceful_shutdown)
        except TimeoutError:
            log.error(
                "Cancel %s running task(s), timeout graceful shutdown exceeded",
                len(self.server_state.tasks),
            )
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _drain(self) -> None:
        """Wait for open connections, then for their tasks, then for the listeners to close.

        uvicorn tells of neither by an event (its protocols edit these sets), so both are polled.
        """
        for pending in (self.server_state.connections, self.server_state.tasks):
            while pending and not self.force_exit:  # noqa: ASYNC110 (no event to wait on)
                await asyncio.sleep(DRAIN_POLL_SECONDS)
        for server in self.servers:
            await server.wait_closed()
