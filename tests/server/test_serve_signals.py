"""``laneway serve`` under SIGHUP and with workers: no call in flight is lost, limits hold.

The calls in flight are held at the simulator (``hold``) until the reload is
over, so they span it however long a busy machine takes, and end at once after.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from laneway.serving.rundir import ServerStatus, StatusFile
from laneway.sim import RunningSim
from tests.helpers import hits, release, sim_url, unique_spec, until
from tests.server.support import CLOCK_GRAIN
from tests.server.test_serve_cli import HELLO, call, laneway_serve

TIMESTAMPED = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING laneway\.serve: config reloaded"
)


def held_config(sim: RunningSim, tmp_path: Path, spec: str) -> Path:
    """One lane, ``slow``, whose upstream holds every answer until ``spec`` is released."""
    path = tmp_path / "laneway.yaml"
    path.write_text(
        f"lanes:\n  slow:\n    sources:\n      - {{base_url: '{sim_url(sim, spec)}', model: m}}\n"
        "server:\n  header_timeout: 500ms\n  drain_timeout: 5s\n"
    )
    return path


def status_of(run: Path, pid: int) -> ServerStatus:
    status = StatusFile(run, pid).read()
    assert status is not None, f"no status file for {pid} in {run}"
    return status


def wait_for_reloads(run: Path, pid: int, count: int, timeout: float = 60.0) -> ServerStatus:
    """The server's status once it has answered ``count`` reloads (polled, bounded)."""
    deadline = time.monotonic() + timeout
    while (status := status_of(run, pid)).reloads < count:
        assert time.monotonic() < deadline, status
        time.sleep(0.02)
    return status


def rest_of_output(proc: subprocess.Popen[bytes]) -> str:
    """Stop the server (SIGTERM drains) and return what it printed after the banner."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)
    assert proc.stdout is not None
    return proc.stdout.read().decode()


def wait_until_serving(url: str, timeout: float = 60.0) -> None:
    """Poll ``/healthz`` until a worker answers (workers import for seconds on a busy host)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if call(url, "/healthz")[0] == 200:
                return
        except OSError:
            assert time.monotonic() < deadline, "no worker answered"
            time.sleep(0.05)


def seconds_until_closed(url: str) -> float:
    """Open a connection, send nothing, and time how long the server keeps it."""
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()  # before the connect: the deadline starts after it
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        assert sock.recv(1) == b""
        return time.monotonic() - started


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sighup_drops_no_call_in_flight(sim, tmp_path, workers) -> None:
    """The issue: SIGHUP killed a one-worker server and its 40 calls. Now it reloads the
    config (unchanged here) and the calls in flight finish on the one they began on."""
    spec = unique_spec("hold")
    path = held_config(sim, tmp_path, spec)
    run = tmp_path / "run"
    with (
        laneway_serve(
            "--config", str(path), "--workers", workers, env={"LANEWAY_RUN_DIR": str(run)}
        ) as (proc, url, _),
        ThreadPoolExecutor(max_workers=4) as pool,
    ):
        body = {"model": "slow", "messages": HELLO}
        wait_until_serving(url)
        pending = [pool.submit(call, url, "/v1/chat/completions", body) for _ in range(4)]
        until(lambda: hits(sim, spec) == 4, "the calls reached the upstream")
        proc.send_signal(signal.SIGHUP)
        reloaded = wait_for_reloads(run, proc.pid, 1)
        assert reloaded.last is not None and reloaded.last.outcome == "applied"
        assert not any(answer.done() for answer in pending)  # held across the reload
        release(sim, spec)
        for answer in pending:
            status, data = answer.result(timeout=15)
            assert status == 200 and data["model"] == "m"
        assert proc.poll() is None
        assert call(url, "/healthz")[0] == 200
        closed_after = seconds_until_closed(url)  # header_timeout, in every worker
        assert 0.5 - CLOCK_GRAIN <= closed_after < 0.5 + 3.0
        lines = rest_of_output(proc).splitlines()
    assert any(TIMESTAMPED.match(line) for line in lines), lines
    with contextlib.closing(sqlite3.connect(tmp_path / "laneway.sqlite3")) as db:
        (rows,) = db.execute("SELECT count(*) FROM calls WHERE lane = 'slow'").fetchone()
    assert rows == 4  # every answered call left its telemetry row
    stamped = [line for line in lines if line.strip() and not line.startswith("{")]
    assert all(re.match(r"^\d{4}-\d\d-\d\d ", line) for line in stamped), lines
    access = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(access) == 4 and all(re.match(r"^\d{4}-\d\d-\d\dT", a["time"]) for a in access)
