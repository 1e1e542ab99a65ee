"""``DisconnectWatch`` both ways: fired by a ``Departure``, or by ``receive``."""

from __future__ import annotations

import asyncio

import pytest

from laneway.server.asgi import ClientGone, Message
from laneway.server.protocol import Departure
from laneway.server.watch import DisconnectWatch


async def _never() -> Message:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def test_a_departure_cancels_the_watched_task() -> None:
    departure = Departure()
    asyncio.get_running_loop().call_soon(departure.leave)
    with pytest.raises(ClientGone), DisconnectWatch(_never, departure):
        await asyncio.sleep(10)


async def test_a_client_gone_before_the_watch_ends_the_call_at_its_first_await() -> None:
    departure = Departure()
    departure.leave()
    with pytest.raises(ClientGone), DisconnectWatch(_never, departure):
        await asyncio.sleep(10)


async def test_a_finished_watch_unhooks_its_task() -> None:
    departure = Departure()
    with DisconnectWatch(_never, departure):
        await asyncio.sleep(0)
    departure.leave()
    await asyncio.sleep(0)
    assert departure.task is None


async def test_without_a_departure_a_disconnect_message_cancels() -> None:
    async def receive() -> Message:
        await asyncio.sleep(0.01)
        return {"type": "http.disconnect"}

    with pytest.raises(ClientGone), DisconnectWatch(receive, None):
        await asyncio.sleep(10)


async def test_other_cancellations_pass_through() -> None:
    departure = Departure()

    async def call() -> None:
        with DisconnectWatch(_never, departure):
            await asyncio.sleep(10)

    task = asyncio.create_task(call())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
