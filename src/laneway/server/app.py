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

A request goes: ``Gateway`` (the ASGI entry: a ``RequestContext`` built once,
browser and request-id checks, ``OPTIONS``, ``/admin``) → ``Router`` (path and
method to an endpoint) → one module of ``server.endpoints`` per API, over the
shared ``GatewayParts`` (body, caller, lane, key limits, reply). Errors raised
on the way are answered here in the endpoint's shape. The lifespan is
``server.lifespan``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from laneway.config.models import LanewayConfig
from laneway.core.errors import LanewayError, RequestInvalid
from laneway.core.records import CallMeta
from laneway.engine.gateway import Engine
from laneway.engine.recording import CallClock
from laneway.metrics import Metrics
from laneway.metrics.watched import KeyLedgerReport
from laneway.server.asgi import ClientGone, Receive, Scope, Send
from laneway.server.browsers import BrowserGuard
from laneway.server.context import CallsInFlight, RequestContext
from laneway.server.endpoints import route_table
from laneway.server.endpoints.health import Health
from laneway.server.endpoints.metrics import Scrapes
from laneway.server.endpoints.models import Models
from laneway.server.errors import Refused
from laneway.server.health import ConfigId, lane_states
from laneway.server.keys import KeyRing
from laneway.server.lifespan import Lifecycle
from laneway.server.limits import KeyLimits, limits_keys
from laneway.server.parts import GatewayParts
from laneway.server.protocol import DEPARTURE
from laneway.server.request_ids import REQUEST_ID_RULE, request_id, tagging_send
from laneway.server.router import Router
from laneway.server.status import StatusPage
from laneway.server.status_budgets import BudgetBoard

if TYPE_CHECKING:
    from laneway.server.admin import AdminApi
    from laneway.server.endpoints.admin import Admin
    from laneway.server.stored_keys import StoredKeys
    from laneway.telemetry import TelemetryWriter

_KINDS = {"/chat/completions": "chat", "/messages": "chat", "/responses": "chat"}
_KINDS |= {"/embeddings": "embed", "/ocr": "ocr"}
"""The call kind of each call endpoint (``/v1`` or not), for the record of a crashed request."""

log = logging.getLogger("laneway.server")


class Gateway:
    """Serves the endpoints of the module doc over ``engine``, as ``config`` says.

    ``metrics`` (also an observer of ``engine``) enables ``GET /metrics``;
    ``telemetry`` (also an observer) is started and flushed by the lifespan.
    ``limits`` are the keys' limits, made by ``laneway.app`` (``gateway_over``):
    a config whose keys have limits is refused without them.
    ``in_flight`` counts engine calls running now (``GET /healthz`` reports it);
    ``calls`` is the count to add to, shared by the gateways of successive
    configs (``serving.generations``) so it covers calls draining on an old one.
    """

    def __init__(
        self,
        config: LanewayConfig,
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
        self.config = config
        self.stored = stored
        self.engine = engine
        self.metrics = metrics
        self.telemetry = telemetry
        self.calls = calls or CallsInFlight()
        self.keys = KeyRing(config.server.keys, list(engine.lanes), environ, config.aliases, stored)
        if limits is None and limits_keys(config):
            raise ValueError("keys with limits need KeyLimits: laneway.app makes them")
        self.limits = limits
        if metrics is not None and limits is not None:
            _watch_limits(metrics, limits)
        self.states = lane_states(engine.lanes, config.fallback_chain)
        self.redactor = engine.redactor
        self.config_id = config_id
        self.browsers = BrowserGuard(config.server, open_gateway=self.keys.open)
        self.parts = GatewayParts(config.server, engine, self.keys, limits, metrics, self.calls)
        self.status = None if metrics is None else self._status_page(metrics, stored)
        self.router = self._router(metrics)
        self.admin: Admin | None = None
        if admin is not None:
            from laneway.server.endpoints.admin import Admin

            self.admin = Admin(self.parts, admin)
        self.lifecycle = Lifecycle(
            engine,
            metrics=metrics,
            telemetry=telemetry,
            limits=limits,
            stored=stored,
            admin=admin,
            snapshot_every=config.server.worker_snapshot_interval,
        )

    def _status_page(self, metrics: Metrics, stored: StoredKeys | None) -> StatusPage:
        """The status page, with the keys' and teams' spend against budget when keys have
        limits."""
        limits = self.limits
        board = None if limits is None else BudgetBoard(limits.ledger, limits.keys.values(), stored)
        shared = self.config.state.url is not None
        return StatusPage(self.engine, metrics, board, shared_state=shared)

    def _router(self, metrics: Metrics | None) -> Router:
        """The route table of this config's endpoints (``/metrics`` and the status page with
        ``metrics`` only)."""
        parts = self.parts
        scrapes = None
        if metrics is not None and self.status is not None:
            scrapes = Scrapes(parts, metrics, self.status)
        health = Health(parts, self.states, self.config_id)
        return Router(route_table(parts, health, scrapes), Models(parts).one)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point: HTTP requests and the lifespan protocol."""
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self.lifecycle.lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        rid, usable = request_id(headers)
        rid = self.redactor.text(rid)  # echoed, stored and sent upstream: never a secret
        tagged = tagging_send(send, rid)
        departure, query = scope.get(DEPARTURE), scope.get("query_string", b"")
        ctx = RequestContext(receive, tagged, headers, departure, rid, scope["path"], query)
        started = self.engine.recorder.start()
        parts = self.parts
        try:
            self.browsers.check(headers)
            if not usable:
                raise RequestInvalid("X-Request-Id", REQUEST_ID_RULE)
            origin = headers.get(b"origin")
            if scope["method"] == "OPTIONS":
                await parts.send(ctx, self.router.options(scope, origin, self.browsers))
                return
            if origin is not None:
                ctx.send = self.browsers.with_cors(tagged, origin)
            if self.admin is not None and scope["path"].startswith("/admin"):
                await parts.send(ctx, await self.admin.answer(scope, ctx))
                return
            await self.router.handler(scope)(ctx)
        except ClientGone:
            return
        except (LanewayError, Refused) as exc:
            await parts.send(ctx, parts.redacted(ctx.dialect.error(exc, ctx.lane)))
        except Exception:
            await self._crashed(scope, ctx, started)

    async def _crashed(self, scope: Scope, ctx: RequestContext, started: CallClock) -> None:
        """Answer an unexpected exception: a log line, a record, a 500 in the endpoint's shape.

        Called from inside the ``except`` block, so the log carries the
        traceback; the caller gets only the request id that finds it.
        """
        path: str = scope["path"]
        rid = ctx.request_id
        log.exception("internal error on %s %s, request id %s", scope["method"], path, rid)
        kind = _KINDS.get(path.removeprefix("/v1"), "")
        self.engine.recorder.crashed(ctx.lane, kind, started, CallMeta(request_id=rid))
        with contextlib.suppress(Exception):  # the head may be out already: nothing more to say
            await self.parts.send(ctx, self.parts.redacted(ctx.dialect.crash(ctx.lane, rid)))

    @property
    def in_flight(self) -> int:
        """Engine calls running now (on this process's every config, when ``calls`` is shared)."""
        return self.calls.count

    def start(self) -> None:
        """Start what the lifespan starts (``Lifecycle.start``), in the server's loop."""
        self.lifecycle.start()

    async def opened(self) -> None:
        """Wait for the key store's first read (``Lifecycle.opened``)."""
        await self.lifecycle.opened()

    async def flush(self) -> None:
        """At shutdown: telemetry, then a last metrics snapshot (``Lifecycle.flush``)."""
        await self.lifecycle.flush()

    async def close(self) -> None:
        """Close the engine, the key ledger and the key store (``Lifecycle.close``)."""
        await self.lifecycle.close()


def _watch_limits(metrics: Metrics, limits: KeyLimits) -> None:
    """Count the keys' refusals on ``/metrics``, and the ledger's state when shared (Redis)."""
    metrics.watch_key_refusals(limits.refusals)
    if isinstance(limits.ledger, KeyLedgerReport):
        metrics.watch_key_ledger(limits.ledger)
