"""``GET /metrics`` (Prometheus text) and ``GET /status`` / ``/status.json`` (the status page).

Both cover every lane, so a key limited to some lanes is refused (403); a
key for all lanes may read them, and so may a key with ``lanes: []``, which
can call nothing: the scrape-only credential to give Prometheus. A browser
may send the key as HTTP Basic credentials to ``/status``, and a refused one
is asked for them (``server.status``).
"""

from __future__ import annotations

from laneway.metrics import Metrics, render_metrics
from laneway.server.asgi import Reply
from laneway.server.context import RequestContext
from laneway.server.errors import Refused
from laneway.server.keys import Caller
from laneway.server.parts import GatewayParts
from laneway.server.status import ASK_FOR_KEY, StatusPage, basic_as_bearer, refresh_seconds


class Scrapes:
    """The figures of every lane: the metrics, and the status page made of them."""

    __slots__ = ("metrics", "parts", "status")

    def __init__(self, parts: GatewayParts, metrics: Metrics, status: StatusPage) -> None:
        self.parts = parts
        self.metrics = metrics
        self.status = status

    async def metrics_text(self, ctx: RequestContext) -> None:
        """Prometheus exposition of every lane."""
        parts = self.parts
        self._check_scraper(parts.keys.caller(ctx.headers), "the metrics cover")
        body, content_type = render_metrics(self.metrics, await self.status.gauges())
        body = parts.redactor.bytes(body)
        await parts.send(ctx, Reply(200, body, [], content_type.encode()))

    async def status_page(self, ctx: RequestContext) -> None:
        """``/status`` (HTML) or ``/status.json``, for the keys that may scrape ``/metrics``."""
        try:
            caller = self.parts.keys.caller(basic_as_bearer(ctx.headers))
        except Refused as exc:
            raise Refused(exc.status, exc.code, str(exc), [*exc.headers, *ASK_FOR_KEY]) from None
        self._check_scraper(caller, "the status page covers")
        if ctx.path.endswith(".json"):
            await self.parts.send(ctx, await self.status.json())
        else:
            await self.parts.send(ctx, await self.status.html(refresh_seconds(ctx.query)))

    def _check_scraper(self, caller: Caller, covering: str) -> None:
        """Refuse (403) a key limited to some lanes: these figures cover every lane."""
        if not self.parts.may_scrape(caller):
            message = f"{covering} every lane; this key may use only some of them"
            raise Refused(403, "permission_denied", message)
