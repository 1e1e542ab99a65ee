"""Cancelling a call the moment its client disconnects.

Served by ``GatewayProtocol`` (``laneway serve``), each request carries a
``Departure`` that the protocol fires from ``connection_lost``: the watch
only registers the request's task there. Under any other ASGI server, which
reports a disconnect only through ``receive`` and only to a task waiting on
it, the watch starts such a task on the request's behalf. Either way the
engine call in flight (and its upstream connection) ends at once instead of
running to completion for no one.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from laneway.server.asgi import ClientGone, Receive
from laneway.server.protocol import Departure


class DisconnectWatch:
    """A context manager; inside it, a client disconnect becomes ``ClientGone``.

    Leave the block before sending the final part of the response: ASGI
    servers report a completed response as a disconnect too.
    """

    __slots__ = ("_departure", "_gone", "_receive", "_task", "_watcher")

    def __init__(self, receive: Receive, departure: Departure | None) -> None:
        self._receive = receive
        self._departure = departure
        self._gone = False
        self._task: asyncio.Task[object] | None = None
        self._watcher: asyncio.Task[None] | None = None

    def __enter__(self) -> DisconnectWatch:
        task = self._task = asyncio.current_task()
        departure = self._departure
        if departure is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        elif departure.gone:
            self._leave()
        else:
            departure.task = task
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        departure = self._departure
        if departure is not None:
            departure.task = None
            self._gone = departure.gone
        if self._gone and exc_type is asyncio.CancelledError:
            assert self._task is not None
            self._task.uncancel()
            raise ClientGone from None

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self._leave()

    def _leave(self) -> None:
        self._gone = True
        assert self._task is not None
        self._task.cancel()
