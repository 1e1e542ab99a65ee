"""A gateway with metrics (so with ``/status``) on loopback, and calls to fill its page."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import aiohttp

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.http import AiohttpTransport
from laneway.metrics import Metrics
from tests.server.support import HELLO, RunningGateway, serve_app


def priced_metrics() -> Metrics:
    """Metrics pricing each call at $0.0001 per completion token."""
    return Metrics(lambda record: (0.0001 * (record.usage.completion_tokens or 0), "priced"))


@contextmanager
def serve_status(
    settings: LanewayConfig,
    environ: Mapping[str, str] | None = None,
    metrics: Metrics | None = None,
) -> Iterator[RunningGateway]:
    """Serve ``settings`` with ``Metrics`` observing the engine, as ``laneway serve`` does."""
    env = dict(environ or {})
    metrics = metrics or priced_metrics()
    engine = build_engine(settings, env, transport=AiohttpTransport(), observers=[metrics])
    with serve_app(gateway_over(settings, engine, env, metrics=metrics)) as running:
        yield running


async def chat(
    http: aiohttp.ClientSession,
    gw: RunningGateway,
    lane: str,
    *,
    stream: bool = False,
    headers: Mapping[str, str] | None = None,
) -> int:
    """One chat call on ``lane``; its status (a streamed answer is read to its end)."""
    body: dict[str, Any] = {"model": lane, "messages": HELLO, "stream": stream}
    async with http.post(
        f"{gw.v1}/chat/completions", json=body, headers=dict(headers or {})
    ) as response:
        await response.read()
        return response.status


async def status_json(
    http: aiohttp.ClientSession, gw: RunningGateway, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``GET /status.json`` (which must answer 200)."""
    async with http.get(f"{gw.url}/status.json", headers=dict(headers or {})) as response:
        assert response.status == 200, await response.text()
        data: dict[str, Any] = await response.json()
        return data


def lane_of(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The lane called ``name`` in status data."""
    return next(lane for lane in data["lanes"] if lane["name"] == name)


def source_of(data: dict[str, Any], lane: str, name: str) -> dict[str, Any]:
    """The source called ``name`` of ``lane`` in status data."""
    return next(s for s in lane_of(data, lane)["sources"] if s["name"] == name)
