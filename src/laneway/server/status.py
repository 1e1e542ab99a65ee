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

The page refreshes itself every ``DEFAULT_REFRESH`` seconds; ``/status?refresh=S``
asks for another interval (a wall display every minute, an incident every
second), held within ``REFRESH_BOUNDS``: each refresh renders the whole page
again, so a page cannot ask for it faster than that.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
from typing import Any
from urllib.parse import parse_qs

import orjson
from prometheus_client.core import Metric

from laneway.engine.gateway import Engine
from laneway.engine.standing import LaneStanding, stand
from laneway.metrics import Metrics
from laneway.metrics.standing import SourceGauge, standing_families
from laneway.server.asgi import Reply
from laneway.server.status_budgets import BudgetBoard
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
DEFAULT_REFRESH = 5.0
"""Seconds between the page's refreshes when the address names none."""
REFRESH_BOUNDS = (0.25, 3600.0)
"""The fastest and slowest refresh ``?refresh=`` may ask for; a value outside is moved in."""


class StatusPage:
    """Builds the status data of ``engine`` and ``metrics`` when asked, as HTML or JSON."""

    def __init__(
        self,
        engine: Engine,
        metrics: Metrics,
        budgets: BudgetBoard | None = None,
        *,
        shared_state: bool,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.budgets = budgets
        """Keys' and teams' spend against their budgets (``None``: no key has limits)."""
        self.shared_state = shared_state
        """Whether admission's state is shared (``state.url``): the page says so."""

    async def standings(self) -> list[LaneStanding]:
        """Every lane's standing now (one store peek per lane)."""
        engine = self.engine
        store = engine.loop.admission.store
        return await stand(engine.lanes, store, engine.clock, engine.routes.fallback_chain)

    async def gauges(self) -> list[Metric]:
        """``/metrics``' breaker-state and source-health gauges, read now."""
        rows = [
            SourceGauge(lane.name, s.name, s.breaker, s.health if s.tried else None)
            for lane in await self.standings()
            for s in lane.sources
        ]
        return standing_families(rows)

    async def data(self) -> dict[str, Any]:
        """Everything the page shows (the ``/status.json`` body)."""
        engine = self.engine
        standings = await self.standings()
        worker = {
            "pid": os.getpid(),
            "history": "every worker" if self.metrics.share is not None else "this process",
            "live_state": "shared store, AIMD and Retry-After of this worker"
            if self.shared_state
            else "this worker",
        }
        wall = engine.clock.wall()
        data = status_data(standings, self.metrics.server_history(), wall, worker)
        if self.budgets is not None:
            data["budgets"] = await self.budgets.rows(wall)
        return data

    async def html(self, refresh: float = DEFAULT_REFRESH) -> Reply:
        """The page, refreshing itself every ``refresh`` seconds."""
        from laneway.server.status_html import render_page  # first page view, not at start

        body = render_page(await self.data(), refresh)
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


def refresh_seconds(query: bytes) -> float:
    """The refresh interval a page's query string asks for (``refresh=2.5``), within bounds.

    A missing, unreadable or non-finite value gives ``DEFAULT_REFRESH``: the
    page is for people, so a mistyped address still shows it.
    """
    asked = parse_qs(query.decode("latin-1")).get("refresh", [""])[-1]
    try:
        seconds = float(asked)
    except ValueError:
        return DEFAULT_REFRESH
    if not math.isfinite(seconds):
        return DEFAULT_REFRESH
    low, high = REFRESH_BOUNDS
    return min(max(seconds, low), high)
