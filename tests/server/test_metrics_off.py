"""``server.metrics: false``: no ``/metrics``, no status page, and no call counted."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from laneway.app.composer import build_gateway
from laneway.app.feed import RecordFeed
from laneway.cli.banner import banner
from laneway.metrics import Metrics
from laneway.serving.reloader import restart_only_changes
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import HELLO, config, post, serve_app, source


async def test_metrics_off_serves_calls_without_counting_or_serving_figures(
    sim: RunningSim, tmp_path: Path
) -> None:
    settings = config({"lane": {"sources": [source(sim, unique_spec(""))]}}, metrics=False)
    gateway = build_gateway(settings, {}, tmp_path)
    assert gateway.metrics is None
    behind_feeds = [
        consumer
        for observer in gateway.engine.recorder.observers
        if isinstance(observer, RecordFeed)
        for consumer in observer.consumers
    ]
    assert not any(isinstance(o, Metrics) for o in behind_feeds)
    with serve_app(gateway) as running:
        async with aiohttp.ClientSession() as http:
            body = {"model": "lane", "messages": HELLO}
            status, _, _ = await post(http, f"{running.v1}/chat/completions", body)
            assert status == 200
            for path in ("/metrics", "/status", "/status.json"):
                async with http.get(f"{running.url}{path}") as response:
                    assert response.status == 404, path


def test_metrics_default_on_and_switching_them_waits_for_a_restart(sim: RunningSim) -> None:
    lanes = {"lane": {"sources": [source(sim, unique_spec(""))]}}
    on, off = config(lanes), config(lanes, metrics=False)
    assert on.server.metrics
    assert restart_only_changes(on, off) == ["server.metrics"]
    assert "metrics and status page: off (server.metrics: false)" in banner(
        off, {}, "http://127.0.0.1:4000", 1, Path(".")
    )
