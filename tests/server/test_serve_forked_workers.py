"""``laneway serve --workers 2`` forks its workers from the supervisor, so they share its modules.

A spawned worker is a fresh interpreter (``multiprocessing.spawn`` in its command
line) that imports the whole stack again; a forked one has the supervisor's
command line and shares the pages of every module imported before the fork.
A worker that dies is replaced by another forked one.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest
from uvicorn.config import Config

from laneway.serving import forking
from laneway.sim import RunningSim
from tests.server.test_serve_cli import HELLO, call, laneway_serve
from tests.server.test_serve_signals import wait_until_serving
from tests.server.test_serve_worker_metrics import config, sharing


def children(pid: int) -> set[int]:
    """The live child processes of ``pid``."""
    listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(child) for child in listed.split()}


def command_line(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def replaced(pid: int, gone: int, timeout: float = 30.0) -> set[int]:
    """The supervisor's workers once ``gone`` has been replaced (polled, bounded)."""
    deadline = time.monotonic() + timeout
    while gone in (workers := children(pid)) or len(workers) < 2:
        assert time.monotonic() < deadline, workers
        time.sleep(0.05)
    return workers


def test_workers_are_forked_and_a_dead_one_is_forked_again(sim: RunningSim, tmp_path) -> None:
    path = config(sim, tmp_path)
    env = {"TMPDIR": str(tmp_path)}
    with laneway_serve("--config", str(path), "--workers", "2", env=env) as (proc, url, _):
        wait_until_serving(url)
        sharing(tmp_path, 2)
        workers = children(proc.pid)
        assert len(workers) == 2
        assert all(command_line(w) == command_line(proc.pid) for w in workers)
        first = min(workers)
        os.kill(first, signal.SIGKILL)
        again = replaced(proc.pid, first)
        assert all(command_line(w) == command_line(proc.pid) for w in again)
        for _ in range(4):
            assert call(url, "/v1/chat/completions", {"model": "w", "messages": HELLO})[0] == 200
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


@pytest.mark.parametrize(("forkable", "kind"), [(True, "ForkProcess"), (False, "SpawnProcess")])
def test_a_worker_is_spawned_where_forking_is_unsafe(monkeypatch, forkable, kind) -> None:
    """Forking beside a running thread could copy a lock it holds: such a worker is spawned."""
    monkeypatch.setattr(forking, "can_fork", lambda: forkable)
    with socket.socket() as sock:
        worker = forking.ForkedWorker(Config(app="laneway.cli.serve:worker_app"), [sock])
    assert type(worker.process).__name__ == kind
