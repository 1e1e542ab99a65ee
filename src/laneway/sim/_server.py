"""Run the sim under uvicorn: blocking from the CLI, or on a daemon thread for tests."""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from laneway.sim._app import TRANSPORT, create_app

if TYPE_CHECKING:
    from types import TracebackType

STARTUP_TIMEOUT_SECONDS = 10.0
DROP_CONNECTIONS_AFTER_SECONDS = 0.5
"""Grace given to in-flight answers at shutdown before their connections are dropped."""
GRACEFUL_SHUTDOWN_SECONDS = 2
"""uvicorn's backstop, after which it cancels handlers (and logs their tracebacks)."""

_UNFINISHED_RESPONSE = "ASGI callable returned without completing response."


class _HideIntentionalCuts(logging.Filter):
    """Drop uvicorn's complaint about the truncated bodies that `cut_after` sends on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _UNFINISHED_RESPONSE


_HIDE_INTENTIONAL_CUTS = _HideIntentionalCuts()


class _SimProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, handing each request its transport (for `reset`)."""

    def on_headers_complete(self) -> None:
        """Put the transport in the scope before the request's task first runs."""
        super().on_headers_complete()
        if self.cycle is not None:
            self.cycle.scope[TRANSPORT] = self.transport  # type: ignore[literal-required]


class _SimServer(uvicorn.Server):
    """A uvicorn server that hangs up on clients still connected shortly into shutdown.

    Streams held open by `stall_after` or `nodone` would otherwise keep shutdown
    waiting; hanging up looks to their handlers like the client leaving, so they
    return quietly instead of being cancelled.
    """

    announce = False
    """Whether to print where it listens once it does, and when it stops (the CLI's sim)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Listen; from the CLI, say where, with the roots of each wire format."""
        await super().startup(sockets)
        if self.announce and self.started:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            root = f"http://{host}:{port}/b/<spec>"
            print(
                f"laneway sim: listening on http://{host}:{port} (base_url for a source: "
                f"{root}/v1 for openai and anthropic, {root}/v1beta for gemini); Ctrl-C stops",
                flush=True,
            )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.announce:
            print("laneway sim: stopping", flush=True)
        loop = asyncio.get_running_loop()
        hang_up = loop.call_later(DROP_CONNECTIONS_AFTER_SECONDS, self._hang_up)
        try:
            await super().shutdown(sockets)
        finally:
            hang_up.cancel()

    def _hang_up(self) -> None:
        for connection in list(self.server_state.connections):
            connection.transport.close()


def _server(host: str, port: int) -> _SimServer:
    config = uvicorn.Config(
        create_app(),
        host=host,
        port=port,
        loop="uvloop",
        http=_SimProtocol,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    logging.getLogger("uvicorn.error").addFilter(_HIDE_INTENTIONAL_CUTS)
    return _SimServer(config)


def serve(host: str, port: int) -> None:
    """Serve a fresh sim on `host:port` until interrupted, saying where it listens."""
    server = _server(host, port)
    server.announce = True
    server.run()


class RunningSim:
    """A sim serving on a daemon thread; `stop()` (or leaving the `with` block) ends it."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, host: str) -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.port: int = server.servers[0].sockets[0].getsockname()[1]

    @property
    def base_url(self) -> str:
        """Root URL of the sim, e.g. `http://127.0.0.1:43123`, without a trailing slash."""
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        """Shut uvicorn down cleanly and wait for its thread to finish."""
        self._server.should_exit = True
        self._thread.join()

    def __enter__(self) -> RunningSim:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def _wait_until_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the sim server exited during startup (is the port taken?)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the sim server did not start listening in time")
        time.sleep(0.005)


def start_in_thread(host: str = "127.0.0.1", port: int = 0) -> RunningSim:
    """Start a fresh sim on a daemon thread with its own event loop, once it listens.

    With `port=0` the OS picks a free port; read it from the result's `port`.
    """
    server = _server(host, port)
    thread = threading.Thread(target=server.run, name=f"laneway-sim-{port}", daemon=True)
    thread.start()
    _wait_until_started(server, thread)
    return RunningSim(server, thread, host)


def main(argv: list[str] | None = None) -> int:
    """Run the sim from the command line (`laneway sim --port P`)."""
    parser = argparse.ArgumentParser(
        prog="laneway sim", description="Serve a fault-injecting fake LLM upstream."
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=9100, help="port to bind (default: %(default)s)"
    )
    args: Any = parser.parse_args(argv)
    serve(args.host, args.port)
    return 0
