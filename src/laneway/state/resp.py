"""``RespPipe``: the state scripts sent to Redis over one pipelined connection of its own.

A script call through redis-py costs far more client CPU than its round trip needs.
Measured on a busy 2-core host, CPU of the calling process per ``EVALSHA`` of the
settle script: redis-py (``ScriptBatch``'s pipelines) 277 µs one call at a time and
82 µs eight at a time; an asyncio protocol writing RESP and reading with hiredis 91
and 22 µs. Admission and key limits run one or two scripts per call, so that
difference was most of what shared state cost a request.

Here a call packs its ``EVALSHA`` into the connection's buffer; the buffer goes out in
one write when the event loop's turn ends (the calls of one turn share it, as they
shared a pipeline in ``ScriptBatch``), and hiredis reads the replies as they arrive,
each handed to its caller in order. Nothing is deferred: each caller awaits its own
reply, scripts run in the order they were called, and a call cancelled before its
write leaves is not sent.

Failure is judged by the caller (``FallbackStore``, the key ledger's fallback), as
with redis-py: a lost connection fails every call waiting on it
(``ConnectionError``); no byte read for ``timeout`` seconds while calls wait closes the
connection and fails them (``TimeoutError``); a script Redis does not hold
(``NOSCRIPT``: it restarted or was flushed) is sent again whole (``EVAL``); an error a
script raises comes back as redis-py's ``ResponseError``. The next call opens a new
connection. A caller that stops waiting (its call was cancelled) leaves its reply to
be read and dropped.

Plain TCP and Unix sockets only: a ``rediss://`` (TLS) client keeps redis-py
(``script_runner``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

import hiredis
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from laneway.state.batching import ScriptBatch


class ScriptRunner(Protocol):
    """Runs a registered script with its keys and arguments (``ScriptBatch``, ``RespPipe``)."""

    async def run(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        """The script's answer (its errors raised here)."""
        ...

    async def aclose(self) -> None:
        """Close what the runner opened of its own."""
        ...


def script_runner(client: Redis, timeout: float) -> ScriptRunner:
    """A ``RespPipe`` to ``client``'s server, or ``ScriptBatch`` over ``client`` itself when
    the connection is one the pipe does not speak (TLS)."""
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    if pool.connection_class is UnixDomainSocketConnection:
        return RespPipe(_Address("", 0, kwargs["path"], kwargs), timeout)
    if pool.connection_class is Connection:
        host, port = kwargs.get("host", "localhost"), kwargs.get("port", 6379)
        return RespPipe(_Address(host, port, None, kwargs), timeout)
    return ScriptBatch(client)


@dataclass(frozen=True, slots=True)
class _Address:
    """Where the server is and how to log in: host and port, or a Unix socket's path."""

    host: str
    port: int
    path: str | None
    settings: Mapping[str, Any]

    def handshake(self) -> list[bytes]:
        """The commands a new connection sends first: ``AUTH`` and ``SELECT`` as configured."""
        commands = []
        password, username = self.settings.get("password"), self.settings.get("username")
        if password:
            commands.append(pack("AUTH", *([username] if username else []), password))
        db = int(self.settings.get("db") or 0)
        if db:
            commands.append(pack("SELECT", db))
        return commands


@dataclass(slots=True)
class _Call:
    """A reply awaited: the future its caller waits on, and the script to send again whole."""

    answer: asyncio.Future[Any]
    script: AsyncScript | None = None
    keys: list[str] | None = None
    args: list[Any] | None = None


def pack(*parts: Any) -> bytes:
    """One command in RESP: an array of bulk strings (numbers written as ``str`` writes them).

    hiredis packs it in C: 2.3 µs for a settle's fifteen parts, against 5.9 in Python.
    Its stub types the argument as a one-element tuple and leaves the answer untyped.
    """
    packed: bytes = hiredis.pack_command(cast("tuple[str | int | float | bytes]", parts))
    return packed


class _Wire(asyncio.Protocol):
    """One connection's bytes: hiredis reads them, the pipe hands each reply to its call."""

    def __init__(self, pipe: RespPipe) -> None:
        self.pipe = pipe
        self.reader = hiredis.Reader(encoding="utf-8")
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        pipe = self.pipe
        pipe.last_read = pipe.loop_time()
        while (reply := self.reader.gets()) is not False:
            pipe.replied(self, reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pipe.lost(self, ConnectionError(f"Redis connection lost: {exc or 'closed'}"))


class RespPipe:
    """Script calls to one Redis server over one connection (see the module doc)."""

    def __init__(self, address: _Address, timeout: float) -> None:
        self.address = address
        self.timeout = timeout
        self.last_read = 0.0
        self._wire: _Wire | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[None] | None = None
        self._calls: deque[_Call] = deque()
        """Calls whose commands were written, oldest first: each awaits the next reply."""
        self._buffer: list[tuple[bytes, _Call]] = []
        """Commands of this turn, not written yet, with their calls."""
        self._flushing = False
        self._watch: asyncio.TimerHandle | None = None

    def loop_time(self) -> float:
        """The connection's loop's clock (timeouts only)."""
        assert self._loop is not None
        return self._loop.time()

    async def run(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        """``script``'s answer for ``keys`` and ``args`` (its errors raised here)."""
        loop = asyncio.get_running_loop()
        if self._wire is None or self._loop is not loop:
            await self._connected(loop)
        call = _Call(loop.create_future(), script, keys, args)
        self._send(pack("EVALSHA", script.sha, len(keys), *keys, *args), call)
        return await call.answer

    async def aclose(self) -> None:
        """Close the connection; calls still waiting fail with ``ConnectionError``."""
        if self._wire is not None:
            self.lost(self._wire, ConnectionError("Redis connection closed"))

    def replied(self, wire: _Wire, reply: Any) -> None:
        """Hand ``reply`` to the oldest call waiting (or send its script again whole)."""
        if wire is not self._wire or not self._calls:
            return
        call = self._calls.popleft()
        if isinstance(reply, hiredis.ReplyError):
            if str(reply).startswith("NOSCRIPT") and call.script is not None:
                assert call.keys is not None and call.args is not None
                text = call.script.script
                self._send(pack("EVAL", text, len(call.keys), *call.keys, *call.args), call)
                return
            reply = ResponseError(str(reply))
        if call.answer.done():  # its caller stopped waiting
            return
        if isinstance(reply, Exception):
            call.answer.set_exception(reply)
        else:
            call.answer.set_result(reply)

    def lost(self, wire: _Wire, error: Exception) -> None:
        """The connection ``wire`` is gone: every call waiting on it fails with ``error``."""
        if wire is not self._wire:
            return
        self._wire = None
        calls = [*self._calls, *(call for _, call in self._buffer)]
        self._calls, self._buffer = deque(), []
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if wire.transport is not None:
            wire.transport.abort()
        for call in calls:
            if not call.answer.done():
                call.answer.set_exception(error)

    async def _connected(self, loop: asyncio.AbstractEventLoop) -> None:
        """Open the connection (the calls arriving meanwhile share the opening)."""
        if self._loop is not loop:  # a connection of another (finished) event loop
            self._wire, self._calls, self._buffer, self._watch = None, deque(), [], None
            self._opening, self._loop, self._flushing = None, loop, False
        if self._opening is None or self._opening.done():
            self._opening = loop.create_task(self._open(), name="redis-connect")
            self._opening.add_done_callback(_seen)
        await asyncio.shield(self._opening)

    async def _open(self) -> None:
        assert self._loop is not None
        address = self.address
        async with asyncio.timeout(self.timeout):
            if address.path is not None:
                _, wire = await self._loop.create_unix_connection(lambda: _Wire(self), address.path)
            else:
                _, wire = await self._loop.create_connection(
                    lambda: _Wire(self), address.host, address.port
                )
            self._wire = wire
            answers = []
            for command in address.handshake():
                call = _Call(self._loop.create_future())
                answers.append(call.answer)
                self._send(command, call)
            try:
                await asyncio.gather(*answers)
            except BaseException:
                self.lost(wire, ConnectionError("Redis refused the connection's login"))
                raise

    def _send(self, command: bytes, call: _Call) -> None:
        """Queue ``command`` for this turn's write, and ``call`` for its reply."""
        loop = self._loop
        assert loop is not None
        if self._wire is None:  # lost since the caller found it open
            call.answer.set_exception(ConnectionError("Redis connection lost"))
            return
        self._buffer.append((command, call))
        if not self._flushing:
            self._flushing = True
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write this turn's commands in one write; a call cancelled meanwhile is not sent
        (an admission its caller gave up must not reserve anything)."""
        self._flushing = False
        loop, wire, buffer = self._loop, self._wire, self._buffer
        self._buffer = []
        if loop is None or wire is None or wire.transport is None:
            return
        sent = [(command, call) for command, call in buffer if not call.answer.done()]
        if not sent:
            return
        if not self._calls and self._watch is None:
            self.last_read = loop.time()
            self._watch = loop.call_later(self.timeout, self._check)
        self._calls.extend(call for _, call in sent)
        wire.transport.write(b"".join(command for command, _ in sent))

    def _check(self) -> None:
        """While calls wait, no byte read for ``timeout`` seconds ends the connection."""
        self._watch = None
        loop = self._loop
        if not self._calls or self._wire is None or loop is None:
            return
        due = self.last_read + self.timeout
        if loop.time() >= due:
            self.lost(self._wire, TimeoutError(f"Redis answered nothing in {self.timeout:g} s"))
            return
        self._watch = loop.call_at(due, self._check)


def _seen(task: asyncio.Task[None]) -> None:
    """Retrieve an opening's failure, which its callers (if any still wait) raise."""
    if not task.cancelled():
        task.exception()
