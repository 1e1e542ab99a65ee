"""``Gateway``: the OpenAI-compatible ASGI application over one built ``Engine``.

A raw ASGI callable, so a request costs one route lookup, one header dict,
one JSON parse and hand-written field checks before the engine call; every
per-lane and per-key answer that does not change (model lists, readiness) is
rendered once, at construction. The ``model`` of a request names the lane.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/messages`` (Anthropic's
Messages API), ``POST /v1/responses`` (OpenAI's Responses API, text and
tools), ``POST /v1/embeddings``, ``POST /v1/ocr`` (Mistral's OCR shape, on
``kind: ocr`` lanes), ``GET /v1/models``, ``GET /v1/models/{id}`` (each also
without the ``/v1`` prefix), ``GET /healthz``, ``GET /readyz`` and, when the
gateway was given ``Metrics``, ``GET /metrics``, ``GET /status`` and ``GET
/status.json`` (the status page: ``server.status``). Answers to calls carry
``X-Laneway-Lane``, ``-Source``, ``-Attempts``, ``-Cache`` (``hit``, ``miss``,
``bypass``) and, when not streamed, ``-Usage`` (``provider``, ``estimated``,
``none``; see ``render``). Every answer carries ``X-Request-Id``
(``request_ids``).

``GET /metrics`` (Prometheus text) is guarded like ``/v1``: open when no
``server.keys`` are configured (``laneway serve`` then binds loopback only),
otherwise it takes a bearer key. The figures cover every lane, so a key
limited to some lanes is refused (403); a key for all lanes may scrape, and
so may a key with ``lanes: []``, which can call nothing: that is the
scrape-only credential to give Prometheus. Health and readiness stay open.
Each process counts its own calls; under ``laneway serve --workers N`` the
workers share snapshots (``metrics.share``), so a scrape reaching any one
worker reports the whole server.

The lifespan starts the telemetry writer and the metrics snapshots (workers
only) inside the server's loop and freezes the heap startup built
(``_freeze_startup_heap``). At shutdown (after uvicorn drained the calls in
flight) it flushes the writer for at most ``TELEMETRY_FLUSH_TIMEOUT``
seconds and writes a last snapshot before the engine closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from laneway.core.errors import LanewayError, RequestInvalid, UnknownLane
from laneway.core.records import CallMeta
from laneway.core.types import (
    ChatRequest,
    EmbeddingResponse,
    EmbedRequest,
    LLMResponse,
    OCRResponse,
)
from laneway.engine.gateway import Engine
from laneway.engine.recording import CallClock
from laneway.metrics import Metrics, render_metrics
from laneway.metrics.watched import KeyLedgerReport
from laneway.server.asgi import (
    BodyTooLarge,
    ClientGone,
    Headers,
    Receive,
    Reply,
    Scope,
    Send,
    read_body,
    send_reply,
)
from laneway.server.browsers import BrowserGuard
from laneway.server.dialect import OPENAI_CHAT, Dialect, InboundChat
from laneway.server.errors import Refused, call_headers
from laneway.server.health import ConfigId, lane_states, readiness_body
from laneway.server.keys import Caller, KeyRing, model_body
from laneway.server.limits import UNLIMITED, KeyLimits, LimitedCall, key_limits
from laneway.server.parse import cache_control, caller_deadline, check_embed_bounds
from laneway.server.protocol import DEPARTURE, Departure
from laneway.server.render import answer_headers, ocr_body
from laneway.server.request_ids import (
    REQUEST_ID_RULE,
    forwarded_headers,
    request_id,
    tagging_send,
)
from laneway.server.status import ASK_FOR_KEY, StatusPage, basic_as_bearer, refresh_seconds
from laneway.server.status_budgets import BudgetBoard
from laneway.server.streaming import forward_stream
from laneway.server.watch import DisconnectWatch
from laneway.wire.mistral_ocr import parse_ocr_request
from laneway.wire.openai.chat_request import json_object, lane_name
from laneway.wire.openai.embeddings import embed_call, embeddings_body

if TYPE_CHECKING:
    from laneway.server.admin import AdminApi
    from laneway.server.stored_keys import StoredKeys
    from laneway.telemetry import TelemetryWriter

TELEMETRY_FLUSH_TIMEOUT = 5.0
"""Seconds the shutdown waits for queued telemetry; records still queued are dropped."""

_NO_CALL = call_headers("", None, 0)
_MODEL_PATHS = ("/v1/models/", "/models/")
_KINDS = {"/chat/completions": "chat", "/messages": "chat", "/responses": "chat"}
_KINDS |= {"/embeddings": "embed", "/ocr": "ocr"}
"""The call kind of each call endpoint (``/v1`` or not), for the record of a crashed request."""

log = logging.getLogger("laneway.server")


@dataclass(slots=True)
class Exchange:
    """One request in flight: its channels, headers, and the lane once known.

    ``send`` adds ``X-Request-Id`` to the response head; ``dialect`` gives
    the error shapes of the endpoint (OpenAI's unless it speaks another format).
    """

    receive: Receive
    send: Send
    headers: dict[bytes, bytes]
    departure: Departure | None
    request_id: str
    path: str
    query: bytes
    """The raw query string (``refresh=2``), read only by the routes that take one."""
    lane: str = ""
    dialect: Dialect = OPENAI_CHAT


Handler = Callable[[Exchange], Awaitable[None]]


@dataclass(slots=True)
class CallsInFlight:
    """Engine calls running now, for ``GET /healthz``."""

    count: int = 0


class Gateway:
    """Serves the endpoints of the module doc over ``engine``.

    ``metrics`` (also an observer of ``engine``) enables ``GET /metrics``;
    ``telemetry`` (also an observer) is started and flushed by the lifespan.
    ``in_flight`` counts engine calls running now (``GET /healthz`` reports it);
    ``calls`` is the count to add to, shared by the gateways of successive
    configs (``server.reload``) so it covers calls draining on an old one.
    """

    def __init__(
        self,
        engine: Engine,
        environ: Mapping[str, str],
        *,
        metrics: Metrics | None = None,
        telemetry: TelemetryWriter | None = None,
        limits: KeyLimits | None = None,
        config_id: ConfigId | None = None,
        calls: CallsInFlight | None = None,
        stored: StoredKeys | None = None,
        admin: AdminApi | None = None,
    ) -> None:
        server = engine.config.server
        self.stored = stored
        self.admin = admin
        self.engine = engine
        self.metrics = metrics
        self.telemetry = telemetry
        self.calls = calls or CallsInFlight()
        self._sharing: asyncio.Task[None] | None = None
        self._limit = server.max_request_bytes
        self._margin = server.deadline_margin
        self.keys = KeyRing(server.keys, list(engine.lanes), environ, engine.config.aliases, stored)
        self.limits = limits if limits is not None else key_limits(engine.config, engine.clock)
        if metrics is not None and self.limits is not None:
            metrics.watch_key_refusals(self.limits.refusals)
            if isinstance(self.limits.ledger, KeyLedgerReport):  # shared through Redis
                metrics.watch_key_ledger(self.limits.ledger)
        self.states = lane_states(engine.lanes, engine.config.fallback_chain)
        self.redactor = engine.redactor
        self.config_id = config_id
        status, body = readiness_body(self.states, self.keys.problems, server.ready, config_id)
        self._ready = status, self.redactor.bytes(body)
        summary: dict[str, object] = {"ready": status == 200}
        if config_id is not None:
            summary["config"] = config_id.as_dict()
        self._ready_summary = orjson.dumps(summary)
        self.browsers = BrowserGuard(server, open_gateway=self.keys.open)
        self._all_lanes = frozenset(engine.lanes)
        api: dict[str, tuple[str, Handler]] = {
            "/chat/completions": ("POST", self._chat),
            "/messages": ("POST", self._messages),
            "/messages/count_tokens": ("POST", self._count_tokens),
            "/responses": ("POST", self._responses),
            "/embeddings": ("POST", self._embed),
            "/ocr": ("POST", self._ocr),
            "/models": ("GET", self._models),
        }
        self._routes: dict[str, tuple[str, Handler]] = {
            **{f"/v1{path}": route for path, route in api.items()},
            **api,
            "/healthz": ("GET", self._healthz),
            "/readyz": ("GET", self._readyz),
        }
        self.status: StatusPage | None = None
        if metrics is not None:
            self._routes["/metrics"] = ("GET", self._metrics)
            board = None
            if self.limits is not None:
                board = BudgetBoard(self.limits.ledger, self.limits.keys.values(), stored)
            self.status = StatusPage(engine, metrics, board)
            self._routes["/status"] = ("GET", self._status)
            self._routes["/status.json"] = ("GET", self._status)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point: HTTP requests and the lifespan protocol."""
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        rid, usable = request_id(headers)
        rid = self.redactor.text(rid)  # echoed, stored and sent upstream: never a secret
        tagged = tagging_send(send, rid)
        departure, query = scope.get(DEPARTURE), scope.get("query_string", b"")
        exchange = Exchange(receive, tagged, headers, departure, rid, scope["path"], query)
        started = self.engine.recorder.start()
        try:
            self.browsers.check(exchange.headers)
            if not usable:
                raise RequestInvalid("X-Request-Id", REQUEST_ID_RULE)
            origin = exchange.headers.get(b"origin")
            if scope["method"] == "OPTIONS":
                await self._send(exchange, self._options(scope, origin))
                return
            if origin is not None:
                exchange.send = self.browsers.with_cors(tagged, origin)
            if self.admin is not None and scope["path"].startswith("/admin"):
                await self._send(exchange, await self._admin(scope, exchange))
                return
            await self._route(scope)(exchange)
        except ClientGone:
            return
        except (LanewayError, Refused) as exc:
            await self._send(exchange, self._redacted(exchange.dialect.error(exc, exchange.lane)))
        except Exception:
            await self._crashed(scope, exchange, started)

    async def _admin(self, scope: Scope, ex: Exchange) -> Reply:
        """An ``/admin`` request (``server.admin``), its body read when it has one."""
        from laneway.server.admin import AdminRequest

        assert self.admin is not None
        method: str = scope["method"]
        body = await self._json(ex) if method in ("POST", "PATCH") else None
        client = scope.get("client") or ("-", 0)
        request = AdminRequest(method, ex.path, ex.query, ex.headers, body, str(client[0]))
        return await self.admin.answer(replace(request, request_id=ex.request_id))

    async def _crashed(self, scope: Scope, ex: Exchange, started: CallClock) -> None:
        """Answer an unexpected exception: a log line, a record, a 500 in the endpoint's shape.

        Called from inside the ``except`` block, so the log carries the
        traceback; the caller gets only the request id that finds it.
        """
        path: str = scope["path"]
        rid = ex.request_id
        log.exception("internal error on %s %s, request id %s", scope["method"], path, rid)
        kind = _KINDS.get(path.removeprefix("/v1"), "")
        self.engine.recorder.crashed(ex.lane, kind, started, CallMeta(request_id=rid))
        with contextlib.suppress(Exception):  # the head may be out already: nothing more to say
            await self._send(ex, self._redacted(ex.dialect.crash(ex.lane, rid)))

    def _redacted(self, reply: Reply) -> Reply:
        """``reply`` without secrets: error bodies quote callers and upstreams."""
        body = self.redactor.bytes(reply.body)
        return reply if body is reply.body else Reply(reply.status, body, reply.headers)

    def _lookup(self, path: str) -> tuple[str, Handler] | None:
        """The method and handler of ``path`` (``/v1/models/{id}`` by its prefix)."""
        route = self._routes.get(path)
        if route is None and path.startswith(_MODEL_PATHS):
            return ("GET", self._model)
        return route

    def _route(self, scope: Scope) -> Handler:
        path: str = scope["path"]
        route = self._lookup(path)
        if route is None:
            raise Refused(404, "not_found", f"no such endpoint: {path}")
        method, handler = route
        asked = scope["method"]
        if asked != method and not (asked == "HEAD" and method == "GET"):
            allow = [(b"allow", b"GET, HEAD" if method == "GET" else method.encode())]
            raise Refused(405, "method_not_allowed", f"{path} takes {method}", allow)
        return handler

    def _options(self, scope: Scope, origin: bytes | None) -> Reply:
        """``OPTIONS``: a listed origin's CORS preflight, or the route's ``Allow``."""
        path: str = scope["path"]
        route = self._lookup(path)
        if route is None:
            raise Refused(404, "not_found", f"no such endpoint: {path}")
        methods = b"GET, HEAD, OPTIONS" if route[0] == "GET" else b"POST, OPTIONS"
        if origin is not None:
            return self.browsers.preflight(origin, methods)
        return Reply(204, b"", [(b"allow", methods)])

    async def _send(self, ex: Exchange, reply: Reply) -> None:
        """Send ``reply``, counting its status for ``/metrics``."""
        if self.metrics is not None:
            self.metrics.responded(reply.status)
        await send_reply(ex.send, reply)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Start the telemetry writer and metrics snapshots; at shutdown flush them
        (telemetry bounded, then a last snapshot), then close the engine."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start()
                await self.opened()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    await self.flush()
                finally:
                    await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def start(self) -> None:
        """Start the telemetry writer and the metrics snapshots (in the server's loop)."""
        if self.telemetry is not None:
            self.telemetry.start()
        if self.metrics is not None and self.metrics.share is not None:
            every = self.engine.config.server.worker_snapshot_interval
            self._sharing = asyncio.create_task(self.metrics.share_snapshots(every))
        if self.stored is not None:
            self.stored.start()
        _freeze_startup_heap()

    async def opened(self) -> None:
        """Wait for the first read of the key store (when there is one; bounded)."""
        if self.stored is not None:
            await self.stored.ready()

    async def flush(self) -> None:
        """At shutdown: the queued telemetry (bounded), then a last metrics snapshot."""
        await self._flush_telemetry()
        await self._last_snapshot()

    async def close(self) -> None:
        """Close the engine, the key ledger, and the key store (closing again is harmless)."""
        try:
            await self.engine.aclose()
        finally:
            if self.limits is not None:
                await self.limits.aclose()
            if self.admin is not None:
                await self.admin.aclose()
            if self.stored is not None:
                await self.stored.aclose()

    async def _last_snapshot(self) -> None:
        """Stop the snapshots and write the final figures, so the other workers count them."""
        if self._sharing is None:
            return
        self._sharing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sharing
        assert self.metrics is not None
        try:
            self.metrics.write_snapshot()
        except OSError as exc:
            log.warning("last metrics snapshot not written: %s", exc)

    async def _flush_telemetry(self) -> None:
        if self.telemetry is None:
            return
        stats = await self.telemetry.aclose(TELEMETRY_FLUSH_TIMEOUT)
        if stats.dropped or stats.failed:
            log.warning(
                "telemetry at shutdown: %d rows written, %d dropped, %d lost to failed writes",
                stats.written,
                stats.dropped,
                stats.failed,
            )

    async def _chat(self, ex: Exchange) -> None:
        await self._converse(ex, OPENAI_CHAT)

    async def _messages(self, ex: Exchange) -> None:
        """Anthropic's Messages API on any chat lane (``anthropic_messages``).

        Its dialect is imported on the first such call, not at start (time to ready).
        """
        from laneway.server.anthropic_messages import ANTHROPIC_MESSAGES

        await self._converse(ex, ANTHROPIC_MESSAGES)

    async def _count_tokens(self, ex: Exchange) -> None:
        """Anthropic's ``/v1/messages/count_tokens`` on any chat lane (``count_tokens``)."""
        from laneway.server.anthropic_messages import ANTHROPIC_MESSAGES
        from laneway.server.count_tokens import count_tokens

        ex.dialect = ANTHROPIC_MESSAGES
        _, data, lane = await self._request(ex)
        await self._send(ex, await count_tokens(self.engine, lane, data))

    async def _responses(self, ex: Exchange) -> None:
        """OpenAI's Responses API, its text and tools subset, on any chat lane.

        Its dialect is imported on the first such call, not at start (time to ready).
        """
        from laneway.server.responses_api import RESPONSES

        await self._converse(ex, RESPONSES)

    async def _converse(self, ex: Exchange, dialect: Dialect) -> None:
        """One chat call read and answered in ``dialect``'s wire format."""
        ex.dialect = dialect
        caller, data, lane = await self._request(ex)
        call = dialect.read(data, forwarded_headers(ex.headers, ex.request_id))
        deadline = caller_deadline(ex.headers, self._margin, streaming=call.stream)
        meta = _meta(caller, ex)
        if call.stream:
            with self._counted():
                async with self._limited(caller, lane, call.request) as limited:
                    await self._stream(ex, lane, call, deadline, meta, limited)
            return
        with self._running(ex):
            async with self._limited(caller, lane, call.request) as limited:
                result = await self.engine.chat(
                    lane,
                    call.request,
                    deadline=deadline,
                    meta=meta,
                    cache=cache_control(ex.headers),
                )
                limited.answered(result, result.lane)
        await self._reply(ex, result, call.body(result), limited.rate_headers)

    async def _stream(
        self,
        ex: Exchange,
        lane: str,
        call: InboundChat,
        deadline: float | None,
        meta: CallMeta,
        limited: LimitedCall,
    ) -> None:
        stream = self.engine.chat_stream(lane, call.request, deadline=deadline, meta=meta)
        try:
            with DisconnectWatch(ex.receive, ex.departure):
                closing = await forward_stream(
                    stream, ex.send, call.encoder(), limited.rate_headers
                )
        finally:
            await stream.aclose()
            limited.answered(stream, stream.lane.name)
        if self.metrics is not None:
            self.metrics.responded(200)
        await ex.send({"type": "http.response.body", "body": self.redactor.bytes(closing)})

    async def _embed(self, ex: Exchange) -> None:
        caller, data, lane = await self._request(ex)
        call = embed_call(data, forwarded_headers(ex.headers, ex.request_id))
        check_embed_bounds(call, self.engine.lanes[lane].config)
        deadline = caller_deadline(ex.headers, self._margin, streaming=False)
        with self._running(ex):
            async with self._limited(caller, lane, call.request) as limited:
                result = await self.engine.embed(
                    lane, call.request, deadline=deadline, meta=_meta(caller, ex)
                )
                limited.answered(result, result.lane)
        body = embeddings_body(result)
        await self._reply(ex, result, body, limited.rate_headers)

    async def _ocr(self, ex: Exchange) -> None:
        """Mistral's ``POST /v1/ocr``: one image or PDF page, sent as a ``data:`` URL."""
        caller, data, lane = await self._request(ex)
        call = parse_ocr_request(data)
        deadline = caller_deadline(ex.headers, self._margin, streaming=False)
        with self._running(ex):
            async with self._limited(caller, lane, None) as limited:
                result = await self.engine.ocr(
                    lane,
                    call.document,
                    mime_type=call.mime_type,
                    deadline=deadline,
                    meta=_meta(caller, ex),
                    cache=cache_control(ex.headers),
                )
                limited.answered(result, result.lane)
        body = ocr_body(result, len(call.document))
        await self._reply(ex, result, body, limited.rate_headers)

    async def _request(self, ex: Exchange) -> tuple[Caller, dict[str, Any], str]:
        """The caller, the JSON body and the lane it names (checked against the key)."""
        caller = self.keys.caller(ex.headers)
        data = await self._json(ex)
        return caller, data, self._lane(caller, data, ex)

    def _limited(
        self, caller: Caller, lane: str, request: ChatRequest | EmbedRequest | None
    ) -> LimitedCall:
        """The key's limits around one call (see ``server.limits``); free for unlimited keys."""
        if self.limits is None:
            return UNLIMITED
        return self.limits.call(caller.name, lane, request, caller.limits, caller.spent_before)

    @property
    def in_flight(self) -> int:
        """Engine calls running now (on this process's every config, when ``calls`` is shared)."""
        return self.calls.count

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count a call in flight (``/healthz`` reports it; SIGTERM drains it)."""
        self.calls.count += 1
        try:
            yield
        finally:
            self.calls.count -= 1

    @contextlib.contextmanager
    def _running(self, ex: Exchange) -> Iterator[None]:
        """Count the call and cancel it the moment its client disconnects."""
        with self._counted(), DisconnectWatch(ex.receive, ex.departure):
            yield

    async def _reply(
        self,
        ex: Exchange,
        result: LLMResponse | EmbeddingResponse | OCRResponse,
        body: bytes,
        rate_headers: Headers,
    ) -> None:
        """A 200 answer with the headers every call carries, and the key's ``X-RateLimit-*``;
        ``X-Laneway-Lane`` names the lane that answered (the lane called, or one of its
        ``fallback_lanes``)."""
        headers = answer_headers(
            result.lane, result.source, len(result.attempts), result.cache, result.usage
        )
        await self._send(ex, Reply(200, body, [*headers, *rate_headers]))

    async def _models(self, ex: Exchange) -> None:
        caller = self.keys.caller(ex.headers)
        await self._send(ex, Reply(200, caller.models_body, _NO_CALL))

    async def _model(self, ex: Exchange) -> None:
        """``GET /v1/models/{id}``: a lane or alias the caller may use, else 404 as for an
        unknown lane."""
        caller = self.keys.caller(ex.headers)
        name = ex.path.partition("/models/")[2]
        alias_of = caller.aliases.get(name)
        if alias_of is None and not caller.may_use(name):
            raise UnknownLane(name, list(caller.lanes), caller.aliases)
        await self._send(ex, Reply(200, model_body(name, alias_of), _NO_CALL))

    async def _metrics(self, ex: Exchange) -> None:
        """Prometheus exposition of every lane (who may scrape: see the module doc)."""
        self._check_scraper(self.keys.caller(ex.headers), "the metrics cover")
        assert self.metrics is not None
        gauges = await self.status.gauges() if self.status is not None else []
        body, content_type = render_metrics(self.metrics, gauges)
        body = self.redactor.bytes(body)
        await self._send(ex, Reply(200, body, [], content_type.encode()))

    async def _status(self, ex: Exchange) -> None:
        """``/status`` (HTML) or ``/status.json``, for the keys that may scrape ``/metrics``.

        A browser may send the key as HTTP Basic credentials, and a refused
        one is asked for them (``server.status``).
        """
        try:
            caller = self.keys.caller(basic_as_bearer(ex.headers))
        except Refused as exc:
            raise Refused(exc.status, exc.code, str(exc), [*exc.headers, *ASK_FOR_KEY]) from None
        self._check_scraper(caller, "the status page covers")
        assert self.status is not None
        page = self.status
        if ex.path.endswith(".json"):
            await self._send(ex, await page.json())
        else:
            await self._send(ex, await page.html(refresh_seconds(ex.query)))

    def _check_scraper(self, caller: Caller, covering: str) -> None:
        """Refuse (403) a key limited to some lanes: these figures cover every lane."""
        if not self._may_scrape(caller):
            message = f"{covering} every lane; this key may use only some of them"
            raise Refused(403, "permission_denied", message)

    async def _healthz(self, ex: Exchange) -> None:
        body = orjson.dumps({"status": "ok", "in_flight": self.in_flight})
        await self._send(ex, Reply(200, body, _NO_CALL))

    def _may_scrape(self, caller: Caller) -> bool:
        """True for a key allowed every lane or none (and anyone on an open gateway)."""
        return self.keys.open or not caller.allowed or caller.allowed == self._all_lanes

    async def _readyz(self, ex: Exchange) -> None:
        """Ready or not for anyone; which lanes, keys and variables only for a scraping key."""
        status, body = self._ready
        if not self.keys.open and not self._shows_detail(ex):
            body = self._ready_summary
        await self._send(ex, Reply(status, body, _NO_CALL))

    def _shows_detail(self, ex: Exchange) -> bool:
        if b"authorization" not in ex.headers and b"x-api-key" not in ex.headers:
            return False
        try:
            return self._may_scrape(self.keys.caller(ex.headers))
        except Refused:
            return False

    async def _json(self, ex: Exchange) -> dict[str, Any]:
        """The body as a JSON object, refused unread when it declares too many bytes."""
        declared = ex.headers.get(b"content-length")
        try:
            if declared is not None and declared.isdigit() and int(declared) > self._limit:
                raise BodyTooLarge
            body = await read_body(ex.receive, self._limit)
        except BodyTooLarge:
            message = f"the body is larger than server.max_request_bytes ({self._limit} bytes)"
            raise Refused(413, "request_too_large", message) from None
        return json_object(body)

    def _lane(self, caller: Caller, data: dict[str, Any], ex: Exchange) -> str:
        """The lane the body's ``model`` names (itself or by an alias), if the caller may use it."""
        model = lane_name(data)
        name = self.engine.config.lane_of(model)
        if not caller.may_use(name):
            if name in self.engine.lanes:
                raise Refused(403, "permission_denied", f"this key may not use lane {name!r}")
            raise UnknownLane(model, list(caller.lanes), caller.aliases)
        ex.lane = name
        return name


def _freeze_startup_heap() -> None:
    """Move everything startup built out of the collector's sight (``gc.freeze``).

    Imports, config models and the engine are a few hundred thousand objects
    that live as long as the process; every full collection walked them all,
    a pause of tens of milliseconds that showed up as the p99 under load.
    Garbage already made is collected first, so nothing collectable is frozen.
    """
    gc.collect()
    gc.freeze()


def _meta(caller: Caller, ex: Exchange) -> CallMeta:
    """Who asked: the key's name, and the request's id (the caller's or laneway's)."""
    return CallMeta(request_id=ex.request_id, caller=caller.name)
