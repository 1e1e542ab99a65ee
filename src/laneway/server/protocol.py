"""uvicorn's httptools protocol, with connection limits and the moment a client leaves.

Disconnects: an ASGI application learns of one only by awaiting ``receive``,
so a plain ASGI app needs a second task per request parked on ``receive`` to
notice one (``DisconnectWatch``'s fallback). That task, its wake-up and its
cancellation cost more CPU per call than the rest of the request plumbing.
This protocol instead hands each request a ``Departure`` in its scope and
fires it from ``connection_lost``, where the transport first knows: no task,
and the call is cancelled in the same loop iteration the socket closed.

Limits (``ConnectionLimits``, from ``server:``): a connection that has not
sent a complete head ``header_timeout`` after it opened (or after its
previous answer) is closed, and so is one whose body has not fully arrived
``body_timeout`` after its head, and one idle ``keepalive_timeout`` after
its last answer. A head over ``max_header_bytes`` or
``max_headers`` is answered 431 and the connection closed: the head's
bytes are counted as the parser hands over the URL and each header, so the
limit holds whether the head came in one read or in many (and a body in the
same read as its head does not count). Deadlines are
plain numbers on each connection, checked by one ``Sweeper`` per server that
ticks while connections are open: no timer is armed or cancelled per request.

At ``max_connections`` a new connection first evicts one that has no complete
request waiting for its answer (idle, or still sending its head or body;
among the first ``EVICTION_SCAN`` connections looked at), so
a flood of idle connections cannot lock out ``/healthz`` or a real call; when
every connection is busy with a request, the new one is answered a fixed 503
and closed before anything of it is read.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import weakref
from dataclasses import dataclass, field

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

DEPARTURE = "laneway.departure"
"""The scope key of a request's ``Departure`` (absent under other servers)."""

_HEAD, _BODY, _BUSY, _IDLE = range(4)
"""A connection's phase: reading a head, reading a body, answering, idle between requests."""
_EXPIRED = {_HEAD: "header_timeout", _BODY: "body_timeout", _IDLE: "keepalive_timeout"}
"""Why a connection past its deadline is closed, by its phase (a busy one has none)."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one server process allows its clients (the ``server:`` settings of the same names).

    ``max_connections`` is this process's share: ``laneway serve --workers N``
    gives each worker the configured maximum divided by N.
    """

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    keepalive_timeout: float = 5.0
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    max_connections: int = 1024

    @property
    def tick(self) -> float:
        """How often the sweeper looks: a quarter of the shortest timeout, in [0.05, 1] s."""
        return min(1.0, max(0.05, min(self.header_timeout, self.body_timeout) / 4))


@dataclass(slots=True)
class ConnectionStats:
    """This process's connection figures since start (read by ``/metrics``)."""

    opened: int = 0
    refused: int = 0
    closed: dict[str, int] = field(default_factory=dict)
    """Connections the gateway closed, by reason: ``header_timeout``, ``body_timeout``,
    ``header_too_large``, ``evicted``."""
    open_now: int = 0

    def close(self, reason: str) -> None:
        """Count one connection closed for ``reason``."""
        self.closed[reason] = self.closed.get(reason, 0) + 1


CONNECTIONS = ConnectionStats()
"""The figures of every ``GatewayProtocol`` connection in this process."""

EVICTION_SCAN = 64
"""Connections looked at for one to evict when a new one arrives at the cap."""

_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
)
_REFUSAL_BODY = (
    b'{"error":{"message":"too many open connections (server.max_connections); retry shortly",'
    b'"type":"server_error","code":"too_many_connections","param":null}}'
)
REFUSAL = _REFUSAL % (len(_REFUSAL_BODY), _REFUSAL_BODY)
"""The whole answer to a connection over the limit, written once and closed."""


class HeadRefused(Exception):
    """A request head over ``max_header_bytes`` or ``max_headers``."""


class LimitedConfig(Config):
    """uvicorn's ``Config`` carrying the ``ConnectionLimits`` its protocol enforces.

    A subclass (not a field on the app) so it crosses into ``--workers``
    processes with the rest of the settings.
    """

    def __init__(self, app: object, *, limits: ConnectionLimits, **settings: object) -> None:
        super().__init__(app, timeout_keep_alive=limits.keepalive_timeout, **settings)  # type: ignore[arg-type]
        self.limits = limits


class Departure:
    """One request's disconnect signal: cancels the task that is waiting for the answer."""

    __slots__ = ("gone", "task")

    def __init__(self) -> None:
        self.gone = False
        self.task: asyncio.Task[object] | None = None

    def leave(self) -> None:
        """The client left before its answer was complete."""
        self.gone = True
        if self.task is not None:
            self.task.cancel()


class Sweeper:
    """Closes the connections of one server whose deadline passed; ticks while any are open."""

    def __init__(self, loop: asyncio.AbstractEventLoop, state: ServerState, tick: float) -> None:
        self.loop = loop
        self.state = state
        self.tick = tick
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Tick from now on, unless already ticking."""
        if self._handle is None:
            self._handle = self.loop.call_later(self.tick, self._sweep)

    def _sweep(self) -> None:
        self._handle = None
        now = self.loop.time()
        for connection in list(self.state.connections):
            if isinstance(connection, GatewayProtocol) and connection.expires <= now:
                connection.expire()
        if self.state.connections:
            self.start()


_SWEEPERS: weakref.WeakKeyDictionary[ServerState, Sweeper] = weakref.WeakKeyDictionary()


class GatewayProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` plus a ``Departure`` per request and the limits of the module doc."""

    def __init__(self, config: Config, server_state: ServerState, **kwargs: object) -> None:
        super().__init__(config, server_state, **kwargs)  # type: ignore[arg-type]
        limits = getattr(config, "limits", None)
        self.limits = limits if isinstance(limits, ConnectionLimits) else ConnectionLimits()
        self.phase = _HEAD
        self.expires = math.inf
        """Loop time at which the sweeper closes this connection (``inf``: never)."""
        self.head_bytes = 0
        """Bytes received since this head began (its body too, once in the same read)."""
        self.parsed_head = 0
        """Bytes of this head's URL and headers the parser has handed over."""
        self.header_count = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admit the connection (evicting an idle one at the limit) or refuse it at once."""
        if len(self.connections) >= self.limits.max_connections and not self._evict_one():
            CONNECTIONS.refused += 1
            self.transport = transport  # type: ignore[assignment]
            transport.write(REFUSAL)  # type: ignore[attr-defined]
            transport.close()
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        CONNECTIONS.opened += 1
        CONNECTIONS.open_now += 1
        self.expires = self.loop.time() + self.limits.header_timeout
        sweeper = _SWEEPERS.get(self.server_state)
        if sweeper is None:
            sweeper = _SWEEPERS[self.server_state] = Sweeper(
                self.loop, self.server_state, self.limits.tick
            )
        sweeper.start()

    def _evict_one(self) -> bool:
        """Close one connection that has no complete request waiting; False if none is found.

        Only the first ``EVICTION_SCAN`` connections are looked at, so refusing
        a connection when all are busy stays cheap however high the cap is.
        """
        for connection in itertools.islice(self.connections, EVICTION_SCAN):
            if isinstance(connection, GatewayProtocol) and connection.phase != _BUSY:
                connection.close_for("evicted")
                return True
        return False

    def close_for(self, reason: str) -> None:
        """Close this connection for ``reason`` (counted), and stop treating it as open."""
        CONNECTIONS.close(reason)
        self.connections.discard(self)
        self.expires = math.inf
        self.transport.close()

    def expire(self) -> None:
        """The sweeper found this connection past its deadline."""
        self.close_for(_EXPIRED[self.phase])

    def data_received(self, data: bytes) -> None:
        """Feed the parser; a head over the limits is answered 431, a malformed one 400."""
        self._unset_keepalive_if_required()
        if self.phase == _HEAD:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, HeadRefused):
                self._refuse_head(str(exc.__context__))
                return
            self._bad_request()
            return
        except httptools.HttpParserUpgrade:
            self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            self._bad_request()
            return
        if self.phase == _HEAD and self.head_bytes > self.limits.max_header_bytes:
            self._refuse_head(f"the request head is over {self.limits.max_header_bytes} bytes")

    def _bad_request(self) -> None:
        message = "Invalid HTTP request received."
        self.logger.warning(message)
        self.send_400_response(message)

    def _refuse_head(self, message: str) -> None:
        body = (
            b'{"error":{"message":"%s (server.max_header_bytes, server.max_headers)",'
            b'"type":"invalid_request_error","code":"header_too_large","param":null}}'
            % message.encode()
        )
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        self.close_for("header_too_large")

    def on_message_begin(self) -> None:
        """A new request: its head is due ``header_timeout`` from now (or from the connect)."""
        super().on_message_begin()
        self.header_count = 0
        self.parsed_head = 0
        if self.phase != _HEAD:
            self.phase = _HEAD
            self.head_bytes = 0
            self.expires = self.loop.time() + self.limits.header_timeout

    def on_url(self, url: bytes) -> None:
        """Count the URL's bytes against ``max_header_bytes``."""
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        """Count the header; past ``max_headers`` or ``max_header_bytes`` the head is refused."""
        self.header_count += 1
        if self.header_count > self.limits.max_headers:
            raise HeadRefused(f"the request has more than {self.limits.max_headers} headers")
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count_head(self, size: int) -> None:
        self.parsed_head += size
        if self.parsed_head > self.limits.max_header_bytes:
            raise HeadRefused(f"the request head is over {self.limits.max_header_bytes} bytes")

    def on_headers_complete(self) -> None:
        """Give the request its ``Departure`` before its task first runs; the body is now due."""
        self.phase = _BODY
        self.expires = self.loop.time() + self.limits.body_timeout
        super().on_headers_complete()
        if self.cycle is not None:
            self.cycle.scope[DEPARTURE] = Departure()  # type: ignore[literal-required]

    def on_message_complete(self) -> None:
        """The request is whole: busy until its answer is out (idle if it was answered early)."""
        super().on_message_complete()
        if self.cycle is not None and self.cycle.response_complete:
            self._idle()
        else:
            self.phase = _BUSY
            self.expires = math.inf

    def on_response_complete(self) -> None:
        """The answer is out: idle until the next request, for ``keepalive_timeout``.

        uvicorn arms its own keep-alive timer here too, but cancels it on any
        byte received, such as the rest of a body answered before it was read;
        this deadline holds until the next request begins.
        """
        super().on_response_complete()
        if self.phase == _BUSY and self.cycle is not None and self.cycle.response_complete:
            self._idle()

    def _idle(self) -> None:
        self.phase = _IDLE
        self.expires = self.loop.time() + self.limits.keepalive_timeout

    def connection_lost(self, exc: Exception | None) -> None:
        """Fire the unanswered request's ``Departure``, then let uvicorn clean up."""
        if self.flow is None:  # refused in connection_made: never admitted
            return
        CONNECTIONS.open_now -= 1
        cycle = self.cycle
        super().connection_lost(exc)
        if cycle is not None and cycle.disconnected:
            departure = cycle.scope.get(DEPARTURE)
            if isinstance(departure, Departure):
                departure.leave()
