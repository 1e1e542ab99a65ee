"""``ScriptBatch``: the script calls of concurrent requests sent to Redis as one pipeline.

A round trip through redis-py costs far more CPU than the script it runs
(taking a pooled connection, a timeout scope, one write and one read per
call). Under load many calls are waiting for Redis at once: here the calls
made while a pipeline is under way are queued and sent together as the next
one, so N admissions and settlements cost one write, one read loop and one
pooled connection. Nothing is deferred: each caller still awaits its own
script's answer, scripts run in the order they were called, and a call
cancelled before its pipeline leaves is not sent. With one call at a time
this is one round trip per call, as before.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError


@dataclass(frozen=True, slots=True)
class _Call:
    script: AsyncScript
    keys: list[str]
    args: list[Any]
    answer: asyncio.Future[Any]


class ScriptBatch:
    """Runs registered scripts on ``client``, the calls waiting together in one pipeline."""

    def __init__(self, client: Redis) -> None:
        self.client = client
        self._waiting: list[_Call] = []
        self._sender: asyncio.Task[None] | None = None

    async def run(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        """``script``'s answer for ``keys`` and ``args`` (its errors raised here)."""
        loop = asyncio.get_running_loop()
        call = _Call(script, keys, args, loop.create_future())
        self._waiting.append(call)
        if self._sender is None or self._sender.done() or self._sender.get_loop() is not loop:
            self._sender = loop.create_task(self._send_waiting(), name="redis-batch")
        return await call.answer

    async def aclose(self) -> None:
        """Nothing of its own to close: its connections are the client's, closed with it."""

    async def _send_waiting(self) -> None:
        """Send what waits, one pipeline at a time, until nothing does.

        Whatever stops this task, no call is left waiting: a call it took or
        that still waits is cancelled (its caller then sees ``CancelledError``).
        """
        calls: list[_Call] = []
        try:
            while self._waiting:
                calls = [call for call in self._waiting if not call.answer.done()]
                self._waiting = []
                if calls:
                    await self._send(calls)
        finally:
            self._sender = None
            for call in (*calls, *self._waiting):
                call.answer.cancel()
            self._waiting = []

    async def _send(self, calls: list[_Call]) -> None:
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for call in calls:
                    pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
                answers = await pipe.execute(raise_on_error=False)
        except Exception as error:  # the connection failed: every call in it did
            answers = [error] * len(calls)
        for call, answer in zip(calls, answers, strict=True):
            if isinstance(answer, NoScriptError):  # Redis restarted or its scripts flushed
                answer = await _loading(call)
            if call.answer.done():
                continue
            if isinstance(answer, Exception):
                call.answer.set_exception(answer)
            else:
                call.answer.set_result(answer)


async def _loading(call: _Call) -> Any:
    """The call run alone, which loads its script first (``NOSCRIPT``: it did not run)."""
    try:
        return await call.script(keys=call.keys, args=call.args)
    except Exception as error:
        return error
