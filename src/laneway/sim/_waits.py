"""Silences that end early when the client leaves: a pause, and a hold until a release.

A pause (`sleep`, `delay`, `ttfb`, `stall_after`...) lasts a number of
seconds. A hold (`hold` before the answer's head, `hold_after` in a stream)
lasts until the test releases the request's spec (`POST /_release?spec=`): a
fixed `sleep` makes a call outlast some event only by guessing how long the
event takes, a held call outlasts it by construction and ends the moment the
test says so. A release is kept, so a request that reaches its hold after its
spec was released passes straight through and the order of release and hold
never matters; `/_reset` forgets the releases made.

Both waits are only valid once the request body is read: after that
`receive` has nothing left to report but the disconnect, so waiting on it is
how a silence notices one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class Releases:
    """One event per spec, set once the spec is released."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def event(self, spec: str) -> asyncio.Event:
        """The event a held request of `spec` waits on."""
        event = self._events.get(spec)
        if event is None:
            event = self._events[spec] = asyncio.Event()
        return event

    def release(self, spec: str) -> None:
        """Let every request of `spec`, held now or later, go on."""
        self.event(spec).set()

    def forget(self) -> None:
        """Forget the releases made; requests held now stay held until their spec is released."""
        self._events = {spec: e for spec, e in self._events.items() if not e.is_set()}


async def client_left_within(receive: Receive, seconds: float) -> bool:
    """Wait `seconds`, returning early with `True` if the client disconnects."""
    if seconds <= 0:
        return False
    try:
        async with asyncio.timeout(seconds):
            while (await receive())["type"] != "http.disconnect":
                pass
    except TimeoutError:
        return False
    return True


async def client_left_before(receive: Receive, released: asyncio.Event) -> bool:
    """Wait until `released` is set, returning early with `True` if the client disconnects."""
    if released.is_set():
        return False
    release = asyncio.ensure_future(released.wait())
    try:
        while True:
            message = asyncio.ensure_future(receive())
            await asyncio.wait({release, message}, return_when=asyncio.FIRST_COMPLETED)
            if not message.done():
                message.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await message
                return False
            if message.result()["type"] == "http.disconnect":
                return True
    finally:
        release.cancel()
