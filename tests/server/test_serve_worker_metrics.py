"""``laneway serve --workers 2``: one scrape of ``/metrics`` (or ``/status.json``) reports
both workers' calls.

The workers share snapshots every ``SNAPSHOTS`` seconds (the shortest
``server.worker_snapshot_interval``), so the test waits a tenth of a second,
not a second, for each to hold the calls it answered.
"""

from __future__ import annotations

import signal
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
from prometheus_client.parser import text_string_to_metric_families

from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.server.test_serve_cli import HELLO, call, laneway_serve
from tests.server.test_serve_signals import wait_until_serving

ROUND = 8
"""Calls sent at once; a round lasts ~0.2 s at the upstream, so both workers take some."""
SNAPSHOTS = 0.1
"""Seconds between a worker's snapshots (``server.worker_snapshot_interval``)."""


def config(sim: RunningSim, tmp_path: Path) -> Path:
    path = tmp_path / "laneway.yaml"
    base_url = sim_url(sim, unique_spec("sleep=0.2"))
    path.write_text(
        f"server:\n  worker_snapshot_interval: {SNAPSHOTS}\n"
        f"lanes:\n  w:\n    sources:\n      - {{base_url: '{base_url}', model: m}}\n"
    )
    return path


def requests_total(text: str) -> float:
    """The ``laneway_requests_total`` of lane ``w`` in exposition ``text``."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "laneway_requests_total" and s.labels.get("lane") == "w"
    )


def scrape(url: str, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as response:
        return str(response.read().decode())


def snapshots(folder: Path) -> list[Path]:
    """The workers' snapshot files in the supervisor's folder (made in ``folder``)."""
    return sorted(folder.glob("laneway-workers-*/*.json"))


def sharing(folder: Path, workers: int, timeout: float = 60.0) -> None:
    """Wait until ``workers`` workers have written a snapshot: each has started serving.

    A round sent while one worker still imports would all go to the other.
    """
    deadline = time.monotonic() + timeout
    while len(snapshots(folder)) < workers:
        assert time.monotonic() < deadline, f"{len(snapshots(folder))} of {workers} workers share"
        time.sleep(SNAPSHOTS / 2)


def per_worker(folder: Path) -> list[float]:
    """Each worker's own call count, from its snapshot file."""
    counts = []
    for path in snapshots(folder):
        families = orjson.loads(path.read_bytes())["families"]
        counts.append(
            sum(
                value
                for name, _, _, samples in families
                if name == "laneway_requests"
                for _, labels, value in samples
                if labels.get("lane") == "w"
            )
        )
    return counts


def settled(folder: Path, sent: int, timeout: float = 15.0) -> list[float]:
    """Each worker's count once the snapshots hold all ``sent`` calls (bounded wait).

    Snapshots are replaced whole (temp file and rename) every ``SNAPSHOTS`` seconds,
    so polling them is safe and ends at the first one that holds every call.
    """
    deadline = time.monotonic() + timeout
    while sum(counts := per_worker(folder)) != sent and time.monotonic() < deadline:
        time.sleep(SNAPSHOTS / 2)
    assert sum(counts) == sent, counts
    return counts


def test_a_scrape_reports_every_worker(sim, tmp_path) -> None:
    path = config(sim, tmp_path)
    body = {"model": "w", "messages": HELLO}
    env = {"TMPDIR": str(tmp_path)}  # the supervisor's snapshot folder lands here
    with (
        laneway_serve("--config", str(path), "--workers", "2", env=env) as (proc, url, _),
        ThreadPoolExecutor(max_workers=ROUND) as pool,
    ):
        wait_until_serving(url)
        sharing(tmp_path, 2)
        sent = 0
        for _ in range(10):  # bounded: the kernel spreads connections, seldom all to one
            answers = [pool.submit(call, url, "/v1/chat/completions", body) for _ in range(ROUND)]
            assert all(a.result(timeout=15)[0] == 200 for a in answers)
            sent += ROUND
            counts = settled(tmp_path, sent)
            if len(counts) == 2 and all(counts):
                break
        assert len(counts) == 2 and all(counts), counts  # both workers answered calls
        for _ in range(4):  # whichever worker takes the scrape reports the whole server
            assert requests_total(scrape(url)) == sent
            status = orjson.loads(scrape(url, "/status.json"))
            assert status["worker"]["history"] == "every worker"
            assert status["lanes"][0]["hour"]["requests"] == sent
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    assert not list(tmp_path.glob("laneway-workers-*"))  # the supervisor removed its folder
