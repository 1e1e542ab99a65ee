"""Cancelling a call the moment its client disconnects.

An ASGI server reports a disconnect only through ``receive``, and only to a
task that is waiting on it. ``DisconnectWatch`` waits there on the request's
behalf and cancels the request's task when the client leaves, so the engine
call in flight (and its upstream connection) ends at once instead of running
to completion for no one.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from laneway.server.asgi import ClientGone, Receive


class DisconnectWatch:
    """A context manager; inside it, a client disconnect becomes ``ClientGone``.

    Leave the block before sending the final part of the response: ASGI
    servers report a completed response as a disconnect too.
    """

    __slots__ = ("_gone", "_receive", "_task", "_watcher")

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._gone = False
        self._task: asyncio.Task[object] | None = None
        self._watcher: asyncio.Task[None] | None = None

    def __enter__(self) -> DisconnectWatch:
        self._task = asyncio.current_task()
        self._watcher = asyncio.get_running_loop().create_task(self._watch())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._watcher is not None and self._task is not None
        self._watcher.cancel()
        if self._gone and exc_type is asyncio.CancelledError:
            self._task.uncancel()
            raise ClientGone from None

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self._gone = True
        assert self._task is not None
        self._task.cancel()
