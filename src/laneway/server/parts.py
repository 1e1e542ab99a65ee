"""``GatewayParts``: what every endpoint of the gateway uses, made once per config.

The engine, the key ring and the key limits, the metrics, the redactor and
the count of calls in flight, with the steps each call endpoint takes in the
same order: read the body (bounded), name the caller and the lane, hold the
key's limits around the engine call, count the call and watch for its
client leaving, and send the answer (counted for ``/metrics``, redacted).
The gateway's counterpart of the engine's ``CallParts``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from laneway.config.models import ServerConfig
from laneway.core.errors import UnknownLane
from laneway.core.records import CallMeta
from laneway.core.types import (
    ChatRequest,
    EmbeddingResponse,
    EmbedRequest,
    LLMResponse,
    OCRResponse,
)
from laneway.engine.gateway import Engine
from laneway.metrics import Metrics
from laneway.server.asgi import BodyTooLarge, Headers, Reply, read_body, send_reply
from laneway.server.context import CallsInFlight, RequestContext
from laneway.server.errors import Refused, call_headers
from laneway.server.keys import Caller, KeyRing
from laneway.server.limits import UNLIMITED, KeyLimits, LaneAnswer, LimitedCall
from laneway.server.render import answer_headers
from laneway.server.watch import DisconnectWatch
from laneway.wire.openai.chat_request import json_object, lane_name

A = TypeVar("A", bound=LaneAnswer)

NO_CALL = call_headers("", None, 0)
"""The ``X-Laneway-*`` headers of an answer no engine call made (models, health)."""


class GatewayParts:
    """The shared steps of the endpoints (see the module doc), over one config's engine;
    ``server`` is its ``server:`` settings."""

    __slots__ = (
        "_all_lanes",
        "_limit",
        "calls",
        "engine",
        "keys",
        "limits",
        "margin",
        "metrics",
        "redactor",
        "server",
    )

    def __init__(
        self,
        server: ServerConfig,
        engine: Engine,
        keys: KeyRing,
        limits: KeyLimits | None,
        metrics: Metrics | None,
        calls: CallsInFlight,
    ) -> None:
        self.server = server
        self.engine = engine
        self.keys = keys
        self.limits = limits
        self.metrics = metrics
        self.calls = calls
        self.redactor = engine.redactor
        self.margin = server.deadline_margin
        self._limit = server.max_request_bytes
        self._all_lanes = frozenset(engine.lanes)

    async def send(self, ctx: RequestContext, reply: Reply) -> None:
        """Send ``reply``, counting its status for ``/metrics``."""
        if self.metrics is not None:
            self.metrics.responded(reply.status)
        await send_reply(ctx.send, reply)

    def redacted(self, reply: Reply) -> Reply:
        """``reply`` without secrets: error bodies quote callers and upstreams."""
        body = self.redactor.bytes(reply.body)
        return reply if body is reply.body else Reply(reply.status, body, reply.headers)

    async def request(self, ctx: RequestContext) -> tuple[Caller, dict[str, Any], str]:
        """The caller, the JSON body and the lane it names (checked against the key)."""
        caller = self.keys.caller(ctx.headers)
        data = await self.json(ctx)
        return caller, data, self.lane(caller, data, ctx)

    async def json(self, ctx: RequestContext) -> dict[str, Any]:
        """The body as a JSON object, refused unread when it declares too many bytes."""
        declared = ctx.headers.get(b"content-length")
        try:
            if declared is not None and declared.isdigit() and int(declared) > self._limit:
                raise BodyTooLarge
            body = await read_body(ctx.receive, self._limit)
        except BodyTooLarge:
            message = f"the body is larger than server.max_request_bytes ({self._limit} bytes)"
            raise Refused(413, "request_too_large", message) from None
        return json_object(body)

    def lane(self, caller: Caller, data: dict[str, Any], ctx: RequestContext) -> str:
        """The lane the body's ``model`` names (itself or by an alias), if the caller may use it."""
        model = lane_name(data)
        name = self.engine.routes.lane_of(model)
        if not caller.may_use(name):
            if name in self.engine.lanes:
                raise Refused(403, "permission_denied", f"this key may not use lane {name!r}")
            raise UnknownLane(model, list(caller.lanes), caller.aliases)
        ctx.lane = name
        return name

    def limited(
        self, caller: Caller, lane: str, request: ChatRequest | EmbedRequest | None
    ) -> LimitedCall:
        """The key's limits around one call (see ``server.limits``); free for unlimited keys."""
        if self.limits is None:
            return UNLIMITED
        return self.limits.call(caller.name, lane, request, caller.limits, caller.spent_before)

    async def held(
        self,
        ctx: RequestContext,
        caller: Caller,
        lane: str,
        request: ChatRequest | EmbedRequest | None,
        call: Callable[[], Awaitable[A]],
    ) -> tuple[A, Headers]:
        """The answer of the engine ``call``, made counted in flight, watched for its client
        leaving and under the key's limits; with the key's ``X-RateLimit-*`` headers."""
        with self.calls, DisconnectWatch(ctx.receive, ctx.departure):
            async with self.limited(caller, lane, request) as limited:
                result = await call()
                limited.answered(result, result.lane)
        return result, limited.rate_headers

    async def reply(
        self,
        ctx: RequestContext,
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
        await self.send(ctx, Reply(200, body, [*headers, *rate_headers]))

    def may_scrape(self, caller: Caller) -> bool:
        """True for a key allowed every lane or none (and anyone on an open gateway)."""
        return self.keys.open or not caller.allowed or caller.allowed == self._all_lanes


def call_meta(caller: Caller, ctx: RequestContext) -> CallMeta:
    """Who asked: the key's name, and the request's id (the caller's or laneway's)."""
    return CallMeta(request_id=ctx.request_id, caller=caller.name)
