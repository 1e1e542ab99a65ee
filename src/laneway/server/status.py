"""``GET /status`` (HTML) and ``GET /status.json``: every lane and source, now and over the hour.

Served only with ``/metrics`` and behind the same keys (a key for every lane,
or the scrape-only ``lanes: []``). Browsers cannot send a bearer header when
someone opens a link, so these two routes also take HTTP Basic credentials
with the key as the password (any user name), and a refused page asks for
them (``WWW-Authenticate``): the browser prompts once and resends them with
each refresh.

Live state (readiness, health, breaker, quota use) is read from the state
store when the page is asked for; AIMD limits and Retry-After marks are the
answering process's. The history is ``Metrics.server_history``: every
worker's under ``laneway serve --workers N``, this process's otherwise. The
page says which.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

import orjson

from laneway.engine.gateway import Engine
from laneway.engine.standing import stand
from laneway.metrics import Metrics
from laneway.server.asgi import Reply
from laneway.server.status_view import status_data

HTML = b"text/html; charset=utf-8"
NO_STORE = [(b"cache-control", b"no-store")]
ASK_FOR_KEY = [(b"www-authenticate", b'Basic realm="laneway status", charset="UTF-8"')]
"""Sent with a 401 on the status routes, so a browser prompts for the key."""
PAGE_GUARD = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; "
        b"script-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
]
"""The page loads nothing from anywhere, may fetch only itself, and may not be framed."""


class StatusPage:
    """Builds the status data of ``engine`` and ``metrics`` when asked, as HTML or JSON."""

    def __init__(self, engine: Engine, metrics: Metrics) -> None:
        self.engine = engine
        self.metrics = metrics

    async def data(self) -> dict[str, Any]:
        """Everything the page shows (the ``/status.json`` body)."""
        engine = self.engine
        store = engine.loop.admission.store
        standings = await stand(engine.lanes, store, engine.clock, engine.config.fallback_chain)
        shared_state = engine.config.state.url is not None
        worker = {
            "pid": os.getpid(),
            "history": "every worker" if self.metrics.share is not None else "this process",
            "live_state": "shared store, AIMD and Retry-After of this worker"
            if shared_state
            else "this worker",
        }
        return status_data(standings, self.metrics.server_history(), engine.clock.wall(), worker)

    async def html(self) -> Reply:
        """The page."""
        from laneway.server.status_html import render_page  # first page view, not at start

        body = render_page(await self.data())
        return Reply(200, self.engine.redactor.bytes(body), NO_STORE + PAGE_GUARD, HTML)

    async def json(self) -> Reply:
        """The data, for machines."""
        body = orjson.dumps(await self.data())
        return Reply(200, self.engine.redactor.bytes(body), NO_STORE)


def basic_as_bearer(headers: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """``headers`` with HTTP Basic credentials turned into a bearer key (the password).

    Headers without Basic credentials (or with malformed ones) are returned as
    they are, and the key check then refuses them as usual.
    """
    scheme, _, encoded = headers.get(b"authorization", b"").strip().partition(b" ")
    if scheme.lower() != b"basic":
        return headers
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return headers
    _, colon, password = decoded.partition(b":")
    if not colon or not password:
        return headers
    return {**headers, b"authorization": b"Bearer " + password}
