"""``laneway serve`` as a process: start-up banner, demo lanes, drain on SIGTERM."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from laneway.cli import serve, spend
from laneway.cli.demo import PNG_1X1, write_demo_config
from laneway.config.loaded import read_config
from laneway.metrics import SHARE_DIR_ENV
from laneway.serving.published import WorkerConfigs
from laneway.telemetry import SqliteTelemetryStore
from tests.helpers import hits, release, sim_url, unique_spec, until

LANEWAY = str(Path(sys.executable).parent / "laneway")
HELLO = [{"role": "user", "content": "hello"}]


@contextmanager
def laneway_serve(
    *args: str, env: Mapping[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    """Run ``laneway serve ARGS`` (in ``env``); yield the process, its URL and its banner."""
    proc = subprocess.Popen(
        [LANEWAY, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=None if env is None else {**os.environ, **env},
    )
    try:
        banner = read_banner(proc)
        url = banner.split("laneway serve: ", 1)[1].split()[0].removesuffix("/v1")
        assert url.startswith("http://127.0.0.1:")
        yield proc, url, banner
    finally:
        if proc.poll() is None:  # SIGTERM first: a supervisor killed outright orphans its workers
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def read_banner(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> str:
    """Everything printed up to and including the banner's closing ``ready`` line."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    output = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while b"laneway.serve: ready;" not in output:
            assert selector.select(deadline - time.monotonic()), f"no banner: {output!r}"
            chunk = os.read(fd, 65536)
            assert chunk, f"laneway serve exited: {output!r}"
            output += chunk
    return output.decode()


def call(url: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = None if body is None else orjson.dumps(body)
    request = urllib.request.Request(f"{url}{path}", data=data, method="POST" if data else "GET")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, orjson.loads(response.read())


def test_demo_answers_and_stops_on_sigterm(tmp_path, capsys) -> None:
    """The demo serves every lane kind, keeps its data in a temp folder, removes it on exit."""
    with laneway_serve("--demo", env={"TMPDIR": str(tmp_path)}) as (proc, url, banner):
        status, answer = call(
            url, "/v1/chat/completions", {"model": "demo-chat", "messages": HELLO}
        )
        assert status == 200 and answer["choices"][0]["message"]["content"].startswith("sim")
        status, answer = call(url, "/v1/embeddings", {"model": "demo-embed", "input": "hi"})
        assert len(answer["data"][0]["embedding"]) == 16
        document = {"type": "image_url", "image_url": f"data:image/png;base64,{PNG_1X1}"}
        status, answer = call(url, "/v1/ocr", {"model": "demo-ocr", "document": document})
        assert status == 200 and answer["pages"][0]["markdown"].startswith("sim")
        (folder,) = tmp_path.glob("laneway-demo-*")
        lanes = recorded_lanes(folder / "laneway.sqlite3", 3)
        assert spend.main(["--config", str(folder / "laneway.yaml")]) == 0
        with urllib.request.urlopen(f"{url}/status", timeout=10) as response:
            page = response.read().decode()
        assert all(f"data-lane='{lane}'" in page for lane in ("demo-chat", "demo-embed"))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == -signal.SIGTERM
    for lane in ("demo-chat", "demo-slow", "demo-flaky", "demo-embed", "demo-ocr"):
        assert lane in banner
    assert "curl -s" in banner
    assert f"status page: {url}/status (open)" in banner
    assert f"laneway spend --config {folder / 'laneway.yaml'}" in banner
    assert lanes == ["demo-chat", "demo-embed", "demo-ocr"]
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    costs = [(row[0], row[6][:2]) for row in rows]  # every call priced (demo prices)
    assert [lane for lane, cost in costs if cost in ("$0", "<$")] == lanes
    assert not folder.exists(), "the demo removes its folder when it stops"


def recorded_lanes(path: Path, count: int, timeout: float = 10.0) -> list[str]:
    """The lanes of the telemetry rows at ``path`` once ``count`` are written (demo: each 0.2 s)."""
    deadline = time.monotonic() + timeout
    while True:
        lanes: list[str] = []
        with contextlib.suppress(sqlite3.OperationalError), sqlite3.connect(path) as conn:
            lanes = sorted(lane for (lane,) in conn.execute("SELECT lane FROM calls"))
        conn.close()
        if len(lanes) >= count or time.monotonic() > deadline:
            return lanes
        time.sleep(0.05)


def test_sigterm_drains_calls_in_flight(sim, tmp_path) -> None:
    """A call running when SIGTERM arrives still gets its answer; then the process ends.

    The upstream holds the answer (``hold``) until the server has stopped accepting
    connections, so the call is in flight for the whole drain, however busy the machine.
    """
    config = tmp_path / "laneway.yaml"
    spec = unique_spec("hold")
    config.write_text(
        f"lanes:\n  slow:\n    sources:\n      - {{base_url: '{sim_url(sim, spec)}', model: m}}\n"
        "server:\n  drain_timeout: 5s\n"
    )
    with (
        laneway_serve("--config", str(config)) as (proc, url, banner),
        ThreadPoolExecutor() as pool,
    ):
        assert "  slow  chat   ready\n" in banner
        pending = pool.submit(
            call, url, "/v1/chat/completions", {"model": "slow", "messages": HELLO}
        )
        until(lambda: hits(sim, spec) == 1, "the call reached the upstream")
        proc.send_signal(signal.SIGTERM)
        until(lambda: refuses_connections(url), "the server went on accepting connections")
        assert not pending.done()  # draining, with the call still held at the upstream
        release(sim, spec)
        status, answer = pending.result(timeout=10)
        assert status == 200 and answer["model"] == "m"
        assert proc.wait(timeout=10) == -signal.SIGTERM
        assert proc.stdout is not None
        assert f"INFO laneway.serve: laneway serve: stopped ({url})" in proc.stdout.read().decode()
    assert all(re.match(r"^\d{4}-\d\d-\d\d \d\d:", line) for line in banner.splitlines())


def refuses_connections(url: str) -> bool:
    """Whether a connection to the server at ``url`` is refused (it stopped listening)."""
    host, port = url.removeprefix("http://").split(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_worker_factory_builds_the_config_the_supervisor_published(tmp_path, monkeypatch) -> None:
    config = tmp_path / "laneway.yaml"
    config.write_text(
        "lanes:\n  a:\n    sources:\n      - {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
    )
    share = tmp_path / "workers"
    share.mkdir()
    monkeypatch.setenv(SHARE_DIR_ENV, str(share))
    configs = WorkerConfigs(share)
    configs.publish(3, read_config(config))
    config.write_text("not: [what the supervisor checked")  # the worker reads the published text
    app = serve.worker_app()
    gateway = app.current.gateway
    assert list(gateway.engine.lanes) == ["a"]
    assert gateway.config_id is not None and gateway.config_id.generation == 3
    assert configs.acknowledged(os.getpid()) == (3, None)
    assert gateway.metrics is not None and gateway.telemetry is not None
    store = gateway.telemetry.store
    assert isinstance(store, SqliteTelemetryStore) and store.path == tmp_path / "laneway.sqlite3"
    demo = tmp_path / "demo"
    demo.mkdir()
    configs.publish(4, read_config(write_demo_config("http://127.0.0.1:9", demo)))
    assert "demo-chat" in serve.worker_app().current.gateway.engine.lanes


def test_usage_errors_exit_before_serving(tmp_path, capsys) -> None:
    assert serve.main(["--demo", "--config", "laneway.yaml"]) == 2
    assert "--demo brings its own lanes" in capsys.readouterr().err
    assert serve.main(["--config", str(tmp_path / "missing.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err
