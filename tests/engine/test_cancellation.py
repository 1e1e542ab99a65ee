"""Cancelling a call at any point leaves no task, connection or sleep behind."""

from __future__ import annotations

import asyncio

import pytest

from laneway import Laneway
from laneway.http import AiohttpTransport
from tests.helpers import one_lane, unique_spec

MESSAGES = [{"role": "user", "content": "hello"}]


def acquired(transport: AiohttpTransport) -> int:
    session = transport._session
    return 0 if session is None else len(session.connector._acquired)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "policy"),
    [
        ("sleep=5", {}),
        ("status=503", {"retries": 2, "retry_on": [503], "backoff": {"base": "5s"}}),
        ("status=429,retry_after=5", {"max_pushbacks": 1}),
    ],
    ids=["mid-attempt", "mid-backoff", "mid-pushback"],
)
async def test_cancel_leaves_nothing_behind(sim, spec, policy) -> None:
    transport = AiohttpTransport()
    config = one_lane(sim, unique_spec(spec), deadline="30s", **policy)
    lw = Laneway.from_settings(config, environ={}, transport=transport)
    task = asyncio.create_task(lw.chat("lane", MESSAGES))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert acquired(transport) == 0
    assert asyncio.all_tasks() == {asyncio.current_task()}
    await lw.aclose()


async def test_cancel_mid_stream_releases_the_connection(sim) -> None:
    transport = AiohttpTransport()
    config = one_lane(sim, unique_spec("stall_after=1"), deadline="30s")
    lw = Laneway.from_settings(config, environ={}, transport=transport)
    stream = lw.chat_stream("lane", MESSAGES)
    async for _ in stream:
        break
    await stream.aclose()
    assert acquired(transport) == 0
    await lw.aclose()
