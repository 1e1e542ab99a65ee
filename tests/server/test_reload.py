"""Reloading ``laneway serve`` under load, with one worker and with two: no call fails.

A real ``laneway serve`` runs on the simulator while threads keep calls going.
A changed config goes in through ``laneway reload`` (a lane added, one
deployment's rpm changed), then a broken one through the CLI (refused before
any signal) and through a bare SIGHUP (refused by the server). Every call of
the traffic must succeed, a stream begun before the reload (held at the
simulator until both reloads are over, ``hold_after``) must end whole,
the new lane must answer, and with one worker (in-process state) the
unchanged deployment's quota must carry over while the changed one starts
fresh, counted at the simulator. Every wait polls the server's status file
for the generation, never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen

import orjson
import pytest

from laneway.cli import reload
from laneway.sim import RunningSim
from tests.helpers import hits, release, sim_url, unique_spec, until
from tests.server.test_serve_cli import HELLO, LANEWAY, call, laneway_serve, read_banner
from tests.server.test_serve_signals import (
    status_of,
    wait_for_reloads,
    wait_until_serving,
)

TRAFFIC_THREADS = 6


def config_text(specs: dict[str, str], sim: RunningSim, *, changed_rpm: int, new_lane: bool) -> str:
    """The served config: ``new_lane`` and ``changed_rpm`` are what the reload changes."""
    url = {name: sim_url(sim, spec) for name, spec in specs.items()}
    text = f"""deployments:
  steady: {{base_url: '{url["steady"]}', model: m, rpm: 3}}
  changed: {{base_url: '{url["changed"]}', model: m, rpm: {changed_rpm}}}
  busy: {{base_url: '{url["busy"]}', model: m}}
  slow_stream: {{base_url: '{url["stream"]}', model: m}}
lanes:
  traffic: {{sources: [{{deployment: busy}}]}}
  capped: {{sources: [{{deployment: steady}}], deadline: 1s}}
  moving: {{sources: [{{deployment: changed}}], deadline: 1s}}
  streaming: {{sources: [{{deployment: slow_stream}}], deadline: 60s}}
server: {{drain_timeout: 30s}}
"""
    if new_lane:
        text += "aliases: {gpt-new: added}\n"
        text = text.replace("lanes:\n", "lanes:\n  added: {sources: [{deployment: busy}]}\n")
    return text


def chat(url: str, model: str) -> int:
    """One chat call's status (HTTP errors included)."""
    try:
        return call(url, "/v1/chat/completions", {"model": model, "messages": HELLO})[0]
    except urllib.error.HTTPError as exc:
        return exc.code


def stream_text(url: str) -> str:
    """A streamed chat call on the slow lane, read to the end: its content."""
    body = orjson.dumps({"model": "streaming", "messages": HELLO, "stream": True})
    request = urllib.request.Request(f"{url}/v1/chat/completions", data=body, method="POST")
    text = []
    with urllib.request.urlopen(request, timeout=60) as response:
        for line in response:
            payload = line.strip().removeprefix(b"data: ")
            if payload and payload != b"[DONE]":
                delta = orjson.loads(payload)["choices"][0]["delta"]
                text.append(delta.get("content") or "")
            if payload == b"[DONE]":
                text.append("[DONE]")
    return "".join(text)


class Traffic:
    """Threads calling the ``traffic`` lane back to back until stopped; every status kept."""

    def __init__(self, url: str, pool: ThreadPoolExecutor) -> None:
        self.url = url
        self.stop = threading.Event()
        self.statuses: list[int | str] = []
        self._lock = threading.Lock()
        self.runs = [pool.submit(self._run) for _ in range(TRAFFIC_THREADS)]

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                outcome: int | str = chat(self.url, "traffic")
            except OSError as exc:  # a refused or reset connection is a failed call too
                outcome = repr(exc)
            with self._lock:
                self.statuses.append(outcome)

    def wait_for(self, more: int, timeout: float = 60.0) -> None:
        """Until ``more`` calls past the current count have ended."""
        target = len(self.statuses) + more
        deadline = time.monotonic() + timeout
        while len(self.statuses) < target:
            assert time.monotonic() < deadline, f"traffic stalled at {len(self.statuses)}"
            time.sleep(0.02)

    def finish(self) -> list[int | str]:
        self.stop.set()
        for run in self.runs:
            run.result(timeout=30)
        return self.statuses

    def __enter__(self) -> Traffic:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # on a failed assertion too: the pool waits for these threads


def laneway_reload(run: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``laneway reload ARGS`` as its own process, the way a user runs it."""
    return subprocess.run(
        [LANEWAY, "reload", "--run-dir", str(run), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def reload_here(run: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``laneway reload ARGS`` in this process: the same ``main``, no new interpreter.

    That saves a second of imports a call; ``laneway_reload`` keeps the command tested.
    """
    out, err = io.StringIO(), io.StringIO()
    argv = ["--run-dir", str(run), *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = reload.main(argv)
    return subprocess.CompletedProcess(argv, returncode, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("workers", ["1", "2"])
def test_reload_under_load_fails_no_call(sim: RunningSim, tmp_path: Path, workers: str) -> None:
    specs = {
        "steady": unique_spec(""),
        "changed": unique_spec(""),
        "busy": unique_spec("sleep=0.05"),  # 6 calls always in flight, at ~100 a second
        "stream": unique_spec("hold_after=1"),  # held after its first chunk until released
    }
    path = tmp_path / "laneway.yaml"
    path.write_text(config_text(specs, sim, changed_rpm=2, new_lane=False))
    run = tmp_path / "run"
    env = {"LANEWAY_RUN_DIR": str(run)}
    with (
        laneway_serve(
            "--config", str(path), "--workers", workers, "--log-level", "warning", env=env
        ) as (proc, url, _),
        ThreadPoolExecutor(max_workers=TRAFFIC_THREADS) as pool,
    ):
        wait_until_serving(url)
        first = status_of(run, proc.pid)
        assert first.generation == 1 and first.workers == int(workers)
        if workers == "1":  # in-process state: one worker holds every quota window
            assert [chat(url, "capped") for _ in range(3)] == [200] * 3
            assert [chat(url, "moving") for _ in range(2)] == [200] * 2
        with Traffic(url, pool) as traffic:
            check_reloads(sim, specs, path, run, proc, url, traffic, workers)
        stop_server(proc)


def stop_server(proc: Popen[bytes]) -> None:
    """SIGTERM, so the supervisor stops its workers too (a SIGKILL would orphan them)."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def check_reloads(
    sim: RunningSim,
    specs: dict[str, str],
    path: Path,
    run: Path,
    proc: Popen[bytes],
    url: str,
    traffic: Traffic,
    workers: str,
) -> None:
    """The reloads under ``traffic`` and what must hold after them (see the module doc)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        traffic.wait_for(20)
        stream: Future[str] = pool.submit(stream_text, url)
        until(lambda: hits(sim, specs["stream"]) == 1, "the stream reached the upstream")

        path.write_text(config_text(specs, sim, changed_rpm=3, new_lane=True))
        done = reload_here(run, "--pid", str(proc.pid))
        assert done.returncode == 0, done.stderr
        assert f"serves generation 2 ({status_of(run, proc.pid).hash})" in done.stdout
        assert not stream.done()  # it began on generation 1 and is held until released
        # one worker: steady's window (3 of rpm 3) is spent, so this call waits out its 1 s
        # deadline for a slot; it is asked now and judged at the end (two workers have a
        # window each)
        capped = pool.submit(chat, url, "capped") if workers == "1" else None
        traffic.wait_for(20)
        assert chat(url, "added") == 200 and chat(url, "gpt-new") == 200

        path.write_text(config_text(specs, sim, changed_rpm=3, new_lane=True) + "lanes: [\n")
        refused = reload_here(run, "--pid", str(proc.pid))
        assert refused.returncode == 1 and "not valid YAML" in refused.stderr
        assert status_of(run, proc.pid).reloads == 1  # refused here: the server never heard
        proc.send_signal(signal.SIGHUP)
        status = wait_for_reloads(run, proc.pid, 2)
        assert status.last is not None and status.last.outcome == "refused"
        assert "not valid YAML" in (status.last.reason or "") and status.generation == 2
        traffic.wait_for(20)
        statuses = traffic.finish()
        assert not stream.done()
        release(sim, specs["stream"])
        assert stream.result(timeout=60).endswith("[DONE]")
        assert len(stream.result()) > len("[DONE]") + 8  # every piece of content arrived

        assert statuses and all(s == 200 for s in statuses), sorted(set(map(str, statuses)))
        assert chat(url, "added") == 200
        readiness = call(url, "/readyz")[1]
        assert readiness["config"] == {"generation": 2, "hash": status.hash}
        metrics = scrape_config_metrics(url, int(workers))
        assert metrics["laneway_config_generation"] == 2.0
        assert metrics[f'laneway_config_info{{hash="{status.hash}"}}'] == float(workers)
        assert metrics['laneway_config_reloads_total{outcome="applied"}'] == 1.0
        assert metrics['laneway_config_reloads_total{outcome="refused"}'] == 1.0
        if workers == "1":
            assert capped is not None
            assert capped.result(timeout=30) != 200  # steady kept its window: 3 of rpm 3 spent
            assert hits(sim, specs["steady"]) == 3
            assert [chat(url, "moving") for _ in range(3)] == [200] * 3  # changed: fresh, rpm 3
            assert hits(sim, specs["changed"]) == 5
        assert proc.poll() is None


def scrape_config_metrics(url: str, workers: int) -> dict[str, float]:
    """The ``laneway_config_*`` samples, once every worker's snapshot reports it (polled)."""
    found: dict[str, float] = {}

    def complete() -> bool:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            lines = response.read().decode().splitlines()
        found.clear()
        for line in lines:
            if line.startswith("laneway_config_"):
                name, value = line.rsplit(" ", 1)
                found[name] = float(value)
        info = [v for k, v in found.items() if k.startswith("laneway_config_info")]
        return sum(info) == workers and 'laneway_config_reloads_total{outcome="refused"}' in found

    until(complete, f"metrics of {workers} worker(s): {found}")
    return found


def test_reload_finds_the_server_by_its_config_and_pidfile(sim: RunningSim, tmp_path: Path) -> None:
    path = tmp_path / "laneway.yaml"
    spec = unique_spec("")
    lanes = f"lanes:\n  a: {{sources: [{{base_url: '{sim_url(sim, spec)}', model: m}}]}}\n"
    path.write_text(lanes)
    run, pidfile = tmp_path / "run", tmp_path / "laneway.pid"
    env = {"LANEWAY_RUN_DIR": str(run)}
    args = ("--config", str(path), "--pidfile", str(pidfile))
    with laneway_serve(*args, env=env) as (proc, url, banner):
        assert f"SIGHUP to pid {proc.pid}" in banner
        assert pidfile.read_text().strip() == str(proc.pid)
        path.write_text(lanes.replace("  a:", "  b:"))
        by_config = laneway_reload(run, "--config", str(path))
        assert by_config.returncode == 0, by_config.stderr
        assert "generation 2" in by_config.stdout
        assert chat(url, "b") == 200 and chat(url, "a") == 404
        by_pidfile = reload_here(run, "--pidfile", str(pidfile))
        assert by_pidfile.returncode == 0 and "generation 3" in by_pidfile.stdout
        elsewhere = reload_here(run, "--config", str(tmp_path / "other.yaml"))
        assert elsewhere.returncode == 2 and "no laneway serve of" in elsewhere.stderr
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert not pidfile.exists() and not list(run.glob("laneway-*.json"))


def test_reload_keeps_a_keyless_gateway_on_loopback(sim: RunningSim, tmp_path: Path) -> None:
    """Removing the last key of a gateway bound off loopback is refused, not applied."""
    path = tmp_path / "laneway.yaml"
    lanes = (
        f"lanes:\n  a: {{sources: [{{base_url: '{sim_url(sim, unique_spec(''))}', model: m}}]}}\n"
    )
    keyed = lanes + "server:\n  keys: [{name: ops, key: sk-test-ops-key}]\n"
    path.write_text(keyed)
    run = tmp_path / "run"
    args = ("--config", str(path), "--host", "0.0.0.0")
    with laneway_serve_any_host(args, {"LANEWAY_RUN_DIR": str(run)}) as proc:
        path.write_text(lanes)
        refused = reload_here(run, "--pid", str(proc.pid))
        assert refused.returncode == 1 and "no server.keys" in refused.stderr


@contextmanager
def laneway_serve_any_host(args: tuple[str, ...], env: dict[str, str]) -> Iterator[Popen[bytes]]:
    """``laneway serve`` bound to every address (its banner's URL is not loopback)."""
    proc = subprocess.Popen(
        [LANEWAY, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
    )
    try:
        read_banner(proc)
        yield proc
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
