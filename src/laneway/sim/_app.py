"""The raw ASGI app: route, record the hit, pick a refusal or an answer, send it.

No web framework: a request costs one path split, one cached spec lookup, one
`orjson` parse and one serialisation, which keeps a loopback client, not the sim,
the bottleneck in benchmarks.

Two faults strike before any answer: `no_headers` holds the request without a
response head until the client leaves, and `reset` aborts the connection with
a TCP reset. `reset` needs the socket, which plain ASGI does not give an app,
so the sim's own server puts the transport in the scope (`TRANSPORT`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import orjson

from laneway.sim._answers import (
    Completion,
    Reply,
    chat_reply,
    embeddings_reply,
    error_payload,
    error_reply,
    json_reply,
    models_reply,
    plan_completion,
)
from laneway.sim._anthropic import ANTHROPIC
from laneway.sim._azure import AzureRoute, azure_answer, azure_gate, azure_request, azure_route
from laneway.sim._cache import Prefix, PromptCache
from laneway.sim._echo import credential, echo_key
from laneway.sim._faults import Refusal, choose_refusal
from laneway.sim._gemini import GEMINI
from laneway.sim._native import Call, Dialect, native_refusal, native_steps
from laneway.sim._request import Request, implicit_prefix, wants_stream, wants_stream_usage
from laneway.sim._spec import Behaviour, SpecError, parse_spec
from laneway.sim._state import SimState
from laneway.sim._stream import HANG_SECONDS, Cut, Hold, Pause, Step, stream_steps
from laneway.sim._waits import Releases, client_left_before, client_left_within

SLOW_SEED = 0x5EED
"""Mixed into ``seed`` for the ``slow`` draws (their own stream)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_CHAT = "/chat/completions"
_ENDPOINTS = frozenset({("POST", _CHAT), ("POST", "/embeddings"), ("GET", "/models")})
_STREAM_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_OK_TEXT = Reply(200, b"ok", [(b"content-type", b"text/plain")])
_NATIVE_ROOTS: tuple[tuple[str, Dialect], ...] = (
    ("/v1beta/", GEMINI),
    ("/v1/messages", ANTHROPIC),
)
TRANSPORT = "laneway.sim.transport"
"""Scope key of the request's asyncio transport, set by the sim's server for `reset`."""
_ABORTIVE_CLOSE = struct.pack("ii", 1, 0)
"""SO_LINGER on with a zero timeout: closing the socket sends RST instead of FIN."""


async def _read_body(receive: Receive) -> bytes:
    message = await receive()
    body: bytes = message.get("body", b"")
    while message.get("more_body", False):
        message = await receive()
        body += message.get("body", b"")
    return body


async def _reset(scope: Scope, receive: Receive) -> None:
    """Abort the connection with a TCP reset, then wait until the server has seen it close."""
    transport = scope.get(TRANSPORT)
    if transport is None:
        raise RuntimeError("the reset token needs the sim's own server (laneway.sim.serve)")
    transport.get_extra_info("socket").setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, _ABORTIVE_CLOSE
    )
    transport.abort()
    while (await receive())["type"] != "http.disconnect":
        pass


async def _held_back(
    behaviour: Behaviour, wait: float, scope: Scope, receive: Receive, released: asyncio.Event
) -> bool:
    """Apply the faults that strike before the response head; `True` when no answer follows.

    `wait` is the silence the spec asks for before the head (its sleep, plus a
    plain answer's `ttfb`); `no_headers` makes it last until the client leaves,
    and `hold` adds a wait for `released`, the event of the request's spec.
    """
    if behaviour.reset:
        await _reset(scope, receive)
        return True
    if behaviour.hold and await client_left_before(receive, released):
        return True
    return await client_left_within(receive, HANG_SECONDS if behaviour.no_headers else wait)


async def _send_reply(send: Send, reply: Reply) -> None:
    headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


async def _send_stream(
    send: Send, receive: Receive, steps: Iterable[Step], released: asyncio.Event
) -> None:
    """Send a scripted stream; a `Cut` returns mid-body, which makes uvicorn drop the line.

    A `Hold` waits for `released`, the event of the stream's spec.
    """
    await send({"type": "http.response.start", "status": 200, "headers": _STREAM_HEADERS})
    for step in steps:
        match step:
            case bytes():
                await send({"type": "http.response.body", "body": step, "more_body": True})
            case Pause(seconds):
                if await client_left_within(receive, seconds):
                    return
            case Hold():
                if await client_left_before(receive, released):
                    return
            case Cut():
                return
    await send({"type": "http.response.body", "body": b""})


def _error(status: int, message: str) -> Reply:
    return json_reply(error_payload(status, message), status)


def _native_route(path: str) -> tuple[Dialect, str, str] | None:
    """`(dialect, spec, endpoint)` of a Gemini or Anthropic path, with or without `/b/<spec>`."""
    for root, dialect in _NATIVE_ROOTS:
        head, found, endpoint = path.partition(root)
        if found and (not head or head.startswith("/b/")):
            return dialect, head[3:] or "ok", endpoint
    return None


def _parse_request(body: bytes) -> Request | None:
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return request if isinstance(request, dict) else None


class SimApp:
    """ASGI app simulating OpenAI, Gemini and Anthropic upstreams whose faults are chosen by URL.

    ``now`` (monotonic) and ``wall`` (Unix) are where its time comes from, so
    a test running the app in virtual time gives it the virtual clock; its
    waits are the running loop's timers.
    """

    def __init__(
        self, now: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time
    ) -> None:
        self._now = now
        self._wall = wall
        self._state = SimState(started_at=now())
        self._behaviours: dict[str, Behaviour] = {}
        self._completion_numbers = itertools.count(1)
        self._prompt_cache = PromptCache()
        self._releases = Releases()

    def _cached(self, behaviour: Behaviour, completion: Completion, call: Call) -> Completion:
        """`completion` with what its prompt read from (or wrote to) the prompt cache."""
        prefix = call.cache_prefix
        if prefix is None and call.implicit_cache:
            prefix = Prefix(*implicit_prefix(call.request), explicit=False)
        read, written = self._prompt_cache.use(id(behaviour), prefix)
        if not read and not written:
            return completion
        return dataclasses.replace(completion, cached_tokens=read, cache_write_tokens=written)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request; other ASGI scopes are ignored."""
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        native = _native_route(path)
        azure = azure_route(path)
        if native is not None:
            await self._serve_native(*native, method, scope, receive, send)
        elif azure is not None:
            await self._serve_azure(azure, method, scope, receive, send)
        elif path.startswith("/v1/"):
            await self._serve_upstream("ok", method, path[3:], scope, receive, send)
        elif path.startswith("/b/") and "/v1/" in path:
            spec, _, endpoint = path[3:].partition("/v1/")
            await self._serve_upstream(spec, method, f"/{endpoint}", scope, receive, send)
        else:
            await _send_reply(send, self._control_reply(method, path, scope))

    def hit_times(self, spec: str) -> list[float]:
        """When each request for ``spec`` arrived (seconds since the app's start), as ``/_hits``."""
        times: list[float] = self._state.hits(spec)["times"]
        return times

    def release(self, spec: str) -> None:
        """Let the requests of ``spec`` held by ``hold`` or ``hold_after`` go on (``/_release``)."""
        self._releases.release(spec)

    def _control_reply(self, method: str, path: str, scope: Scope) -> Reply:
        query = parse_qs(scope["query_string"].decode())
        spec = query["spec"][0] if "spec" in query else None
        if (method, path) == ("GET", "/healthz"):
            return _OK_TEXT
        if (method, path) == ("GET", "/_hits"):
            return json_reply(self._state.hits(spec))
        if (method, path) == ("POST", "/_release"):
            if spec is None:
                return _error(400, "sim: /_release needs ?spec=")
            self.release(spec)
            return json_reply({"released": spec})
        if (method, path) == ("POST", "/_reset"):
            self._state.reset()
            self._releases.forget()
            return json_reply({"reset": True})
        return _error(404, f"sim: no route for {method} {path}")

    def _behaviour(self, spec: str) -> Behaviour:
        behaviour = self._behaviours.get(spec)
        if behaviour is None:
            behaviour = self._behaviours[spec] = parse_spec(spec)
        return behaviour

    def _admit(
        self, spec: str, method: str, endpoint: str, body: bytes, now: float
    ) -> tuple[Behaviour, Request] | Reply:
        """Check spec, route and body, recording the hit once the route is known."""
        try:
            behaviour = self._behaviour(spec)
        except SpecError as exc:
            return _error(400, f"sim: {exc}")
        if (method, endpoint) not in _ENDPOINTS:
            return _error(404, f"sim: no route for {method} /v1{endpoint}")
        self._state.record_hit(spec, now)
        request = {} if method == "GET" else _parse_request(body)
        if request is None:
            return _error(400, "sim: the request body is not a JSON object")
        return behaviour, request

    def _answer(
        self, behaviour: Behaviour, endpoint: str, request: Request, refusal: Refusal | None
    ) -> Reply | Iterator[Step]:
        if refusal is not None:
            return error_reply(behaviour, refusal, self._wall())
        if endpoint == "/embeddings":
            return embeddings_reply(behaviour, request)
        if endpoint == "/models":
            return models_reply(behaviour)
        number = next(self._completion_numbers)
        completion = plan_completion(behaviour, request, number, int(self._wall()))
        completion = self._cached(behaviour, completion, Call("chat", request))
        if wants_stream(request):
            return stream_steps(behaviour, completion, wants_stream_usage(request))
        return chat_reply(completion)

    async def _serve_azure(
        self, route: AzureRoute, method: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Serve Azure OpenAI: its gate, then the OpenAI route dressed as Azure answers."""
        query = parse_qs(scope["query_string"].decode())
        refused = azure_gate(route, query, dict(scope["headers"]))
        if refused is not None:
            await _send_reply(send, refused)
            return
        await self._serve_upstream(route.spec, method, route.endpoint, scope, receive, send, route)

    async def _serve_upstream(
        self,
        spec: str,
        method: str,
        endpoint: str,
        scope: Scope,
        receive: Receive,
        send: Send,
        azure: AzureRoute | None = None,
    ) -> None:
        body = await _read_body(receive)
        now = self._now()
        admitted = self._admit(spec, method, endpoint, body, now)
        if isinstance(admitted, Reply):
            await _send_reply(send, admitted)
            return
        behaviour, request = admitted
        if azure is not None:
            request = azure_request(azure, request)
        refusal = choose_refusal(behaviour, spec, request, self._state, now)
        streaming = refusal is None and endpoint == _CHAT and wants_stream(request)
        wait = self._sleep(behaviour, spec) + (0.0 if streaming else behaviour.ttfb)
        released = self._releases.event(spec)
        if await _held_back(behaviour, wait, scope, receive, released):
            return
        answer = self._answer(behaviour, endpoint, request, refusal)
        if azure is not None:
            answer = azure_answer(answer, refusal)
        if behaviour.echo_key:
            answer = echo_key(answer, credential(scope["headers"]))
        if isinstance(answer, Reply):
            await _send_reply(send, answer)
        else:
            await _send_stream(send, receive, answer, released)

    async def _serve_native(
        self,
        dialect: Dialect,
        spec: str,
        endpoint: str,
        method: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """Serve Gemini or Anthropic: the same faults, read and written in the native form."""
        body = await _read_body(receive)
        now = self._now()
        admitted = self._admit_native(dialect, spec, method, endpoint, body, now)
        if isinstance(admitted, Reply):
            await _send_reply(send, admitted)
            return
        behaviour, call = admitted
        refusal = choose_refusal(behaviour, spec, call.request, self._state, now)
        streaming = refusal is None and call.stream
        wait = self._sleep(behaviour, spec) + (0.0 if streaming else behaviour.ttfb)
        released = self._releases.event(spec)
        if await _held_back(behaviour, wait, scope, receive, released):
            return
        answer = self._native_answer(dialect, behaviour, call, refusal)
        if isinstance(answer, Reply):
            await _send_reply(send, answer)
        else:
            await _send_stream(send, receive, answer, released)

    def _sleep(self, behaviour: Behaviour, spec: str) -> float:
        """``sleep``, or ``slow_sleep`` for the share ``slow`` of requests (a latency tail).

        The draws come from a generator of their own, seeded apart from
        ``flaky``'s, so the slow requests are not the failing ones.
        """
        if behaviour.slow is None:
            return behaviour.sleep
        draw = self._state.rng(f"{spec}#slow", behaviour.seed ^ SLOW_SEED).random()
        return behaviour.slow_sleep if draw < behaviour.slow else behaviour.sleep

    def _admit_native(
        self, dialect: Dialect, spec: str, method: str, endpoint: str, body: bytes, now: float
    ) -> tuple[Behaviour, Call] | Reply:
        try:
            behaviour = self._behaviour(spec)
        except SpecError as exc:
            return dialect.error(400, f"sim: {exc}", None, [])
        call = dialect.understand(method, endpoint, _parse_request(body))
        if isinstance(call, Reply):
            return call
        self._state.record_hit(spec, now)
        return behaviour, call

    def _native_answer(
        self, dialect: Dialect, behaviour: Behaviour, call: Call, refusal: Refusal | None
    ) -> Reply | Iterator[Step]:
        if refusal is not None:
            return native_refusal(dialect, behaviour, refusal, self._wall())
        if call.kind == "embed":
            return dialect.embed(behaviour, call.request)
        number = next(self._completion_numbers)
        completion = plan_completion(behaviour, call.request, number, int(self._wall()))
        completion = self._cached(behaviour, completion, call)
        if call.stream:
            return native_steps(behaviour, completion, dialect.writer(completion))
        return dialect.chat(completion)


def create_app(
    now: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time
) -> SimApp:
    """Create a sim with fresh state; its clock (hit times, flap phase) starts ``now()``."""
    return SimApp(now, wall)
