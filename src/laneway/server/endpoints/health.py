"""``GET /healthz`` and ``GET /readyz``: liveness with the calls in flight, and readiness.

Readiness does not change while a config serves, so both of its bodies (the
detail and the summary) are rendered once, here. Anyone may ask; the detail
(which lanes, keys and variables) is for a key that may scrape ``/metrics``.
"""

from __future__ import annotations

import orjson

from laneway.server.asgi import Reply
from laneway.server.context import RequestContext
from laneway.server.errors import Refused
from laneway.server.health import ConfigId, LaneState, readiness_body
from laneway.server.parts import NO_CALL, GatewayParts


class Health:
    """Liveness and readiness of one config's gateway."""

    __slots__ = ("_ready", "_ready_summary", "parts")

    def __init__(
        self, parts: GatewayParts, states: list[LaneState], config_id: ConfigId | None
    ) -> None:
        self.parts = parts
        server = parts.server
        status, body = readiness_body(states, parts.keys.problems, server.ready, config_id)
        self._ready = status, parts.redactor.bytes(body)
        summary: dict[str, object] = {"ready": status == 200}
        if config_id is not None:
            summary["config"] = config_id.as_dict()
        self._ready_summary = orjson.dumps(summary)

    async def healthz(self, ctx: RequestContext) -> None:
        """Alive, with the engine calls running now."""
        body = orjson.dumps({"status": "ok", "in_flight": self.parts.calls.count})
        await self.parts.send(ctx, Reply(200, body, NO_CALL))

    async def readyz(self, ctx: RequestContext) -> None:
        """Ready or not for anyone; which lanes, keys and variables only for a scraping key."""
        status, body = self._ready
        if not self.parts.keys.open and not self._shows_detail(ctx):
            body = self._ready_summary
        await self.parts.send(ctx, Reply(status, body, NO_CALL))

    def _shows_detail(self, ctx: RequestContext) -> bool:
        if b"authorization" not in ctx.headers and b"x-api-key" not in ctx.headers:
            return False
        try:
            return self.parts.may_scrape(self.parts.keys.caller(ctx.headers))
        except Refused:
            return False
