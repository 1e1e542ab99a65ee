"""``laneway serve`` as a process: start-up banner, demo lanes, drain on SIGTERM."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from laneway.cli import serve
from laneway.server import Gateway
from tests.helpers import sim_url, unique_spec

LANEWAY = str(Path(sys.executable).parent / "laneway")
HELLO = [{"role": "user", "content": "hello"}]


@contextmanager
def laneway_serve(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    """Run ``laneway serve ARGS``; yield the process, its URL and its banner."""
    proc = subprocess.Popen(
        [LANEWAY, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        banner = read_banner(proc)
        url = banner.split()[2].removesuffix("/v1")
        assert url.startswith("http://127.0.0.1:")
        yield proc, url, banner
    finally:
        if proc.poll() is None:
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
        while b"\nready;" not in output:
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


def test_demo_answers_and_stops_on_sigterm() -> None:
    with laneway_serve("--demo") as (proc, url, banner):
        status, answer = call(
            url, "/v1/chat/completions", {"model": "demo-chat", "messages": HELLO}
        )
        assert status == 200 and answer["choices"][0]["message"]["content"].startswith("sim")
        status, answer = call(url, "/v1/embeddings", {"model": "demo-embed", "input": "hi"})
        assert len(answer["data"][0]["embedding"]) == 16
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == -signal.SIGTERM
    for lane in ("demo-chat", "demo-slow", "demo-flaky", "demo-embed"):
        assert lane in banner
    assert "curl -s" in banner


def test_sigterm_drains_calls_in_flight(sim, tmp_path) -> None:
    """A call running when SIGTERM arrives still gets its answer; then the process ends."""
    config = tmp_path / "laneway.yaml"
    base_url = sim_url(sim, unique_spec("sleep=0.8"))
    config.write_text(
        f"lanes:\n  slow:\n    sources:\n      - {{base_url: '{base_url}', model: m}}\n"
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
        deadline = time.monotonic() + 5
        while call(url, "/healthz")[1]["in_flight"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        status, answer = pending.result(timeout=10)
        assert status == 200 and answer["model"] == "m"
        assert proc.wait(timeout=10) == -signal.SIGTERM


def test_worker_factory_builds_from_the_environment(tmp_path, monkeypatch) -> None:
    config = tmp_path / "laneway.yaml"
    config.write_text(
        "lanes:\n  a:\n    sources:\n      - {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
    )
    monkeypatch.setenv(serve.CONFIG_ENV, str(config))
    monkeypatch.delenv(serve.DEMO_SIM_ENV, raising=False)
    gateway = serve.worker_app()
    assert isinstance(gateway, Gateway) and list(gateway.engine.lanes) == ["a"]
    monkeypatch.setenv(serve.DEMO_SIM_ENV, "http://127.0.0.1:9")
    assert "demo-chat" in serve.worker_app().engine.lanes
