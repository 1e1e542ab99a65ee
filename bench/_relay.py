"""Starting the servers of the relay benchmarks (streaming, embeddings, workers, scale-out).

Each helper starts one process pinned to a core, waits until it really answers (a
chat completion through it, not an open port) and registers its stop on an
``ExitStack``, so a failed or interrupted run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _gateway_setup as setup
import litellm_env
from _procs import LOOPBACK, Proc, free_port, post_once, spawn
from _report import write_section

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

BENCH = Path(__file__).resolve().parent


@dataclass
class Server:
    """A started server: its process (tree root), port and base URL."""

    proc: Proc
    port: int

    @property
    def pid(self) -> int:
        return self.proc.popen.pid

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


def wait_chat(server: Server, model: str, timeout_s: float = 30.0) -> float:
    """Poll with keyed chat requests until one is answered 200; return seconds waited."""
    started = time.monotonic()
    body = setup.request_body(model)
    while time.monotonic() - started < timeout_s and server.proc.popen.poll() is None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            status, _ = post_once(server.port, setup.PATH, body, headers=setup.AUTH_HEADERS)
            if status == 200:
                return time.monotonic() - started
        time.sleep(0.005)
    raise RuntimeError(
        f"{server.proc.name} did not answer on :{server.port}\n{server.proc.log_tail()}"
    )


def start(stack: ExitStack, name: str, cmd: list[str], cpu: int | None, **kw: Any) -> Server:
    """Spawn ``cmd`` (its ``{port}`` filled with a free port) and stop it with ``stack``."""
    port = free_port()
    cmd = [part.replace("{port}", str(port)) for part in cmd]
    if cpu is None:  # every core, whatever this orchestrator is pinned to
        cmd = ["taskset", "-c", f"0-{(os.cpu_count() or 1) - 1}", *cmd]
    proc = spawn(name, cmd, cpu=cpu, **kw)
    stack.callback(proc.stop)
    return Server(proc, port)


def stamp_upstream(stack: ExitStack, cpu: int | None, *args: str) -> Server:
    """``_stamp_upstream.py`` (streams, embeddings, counts), ready when ``/stats`` answers."""
    cmd = [sys.executable, str(BENCH / "_stamp_upstream.py"), "{port}", *args]
    server = start(stack, "upstream", cmd, cpu)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            stats(server)
            return server
        time.sleep(0.05)
    raise RuntimeError(f"upstream did not start\n{server.proc.log_tail()}")


def stats(upstream: Server) -> dict[str, Any]:
    """The stamp upstream's ``/stats``."""
    conn = http.client.HTTPConnection(LOOPBACK, upstream.port, timeout=10)
    try:
        conn.request("GET", "/stats")
        return dict(json.loads(conn.getresponse().read()))
    finally:
        conn.close()


def laneway(
    stack: ExitStack,
    config: dict[str, Any],
    scratch: Path,
    cpu: int | None,
    *,
    name: str = "laneway",
    workers: int = 1,
    tree: Path | None = None,
) -> Server:
    """``laneway serve`` over ``config`` (written to ``scratch``), access log on (stderr).

    ``tree``: another checkout's code (``PYTHONPATH=tree/src``) in this one's environment.
    """
    path = setup.write_yaml(scratch / f"{name}.yaml", config)
    cmd = [str(setup.LANEWAY_BIN), "serve", "--config", str(path), "--port", "{port}"]
    cmd += ["--workers", str(workers)]
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree / "src")}
    return start(stack, name, ["env", "-C", str(scratch), *cmd], cpu, env=env)


def bare(stack: ExitStack, upstream: Server, cpu: int | None) -> Server:
    """The bare uvicorn + aiohttp pass-through (the floor) in front of ``upstream``."""
    cmd = [sys.executable, str(BENCH / "_bare_proxy.py"), "{port}", upstream.url]
    return start(stack, "bare", cmd, cpu)


def litellm(stack: ExitStack, models: dict[str, str], scratch: Path, cpu: int | None) -> Server:
    """LiteLLM's proxy, one worker: each ``model_name`` of ``models`` at its ``api_base``."""
    litellm_env.ensure()
    model_list = [
        {
            "model_name": name,
            "litellm_params": {
                "model": f"openai/{setup.UPSTREAM_MODEL}",
                "api_base": base,
                "api_key": "sk-bench-dummy",
            },
        }
        for name, base in models.items()
    ]
    path = setup.write_yaml(scratch / "litellm.yaml", {"model_list": model_list})
    cmd = setup.litellm_cmd(path, 0, scratch)
    cmd[cmd.index("--port") + 1] = "{port}"
    return start(stack, "litellm", cmd, cpu, env=setup.litellm_env_vars())


def exit_on_signal() -> None:
    """SIGINT/SIGTERM/SIGHUP become ``SystemExit``, so every ``ExitStack`` stops its servers."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


@contextlib.contextmanager
def kept_off(cpu: int) -> Iterator[None]:
    """This orchestrator on ``cpu`` (the load core) meanwhile, away from the server's.

    The affinity is restored after, so the report's ``nproc`` is the machine's.
    """
    affinity = os.sched_getaffinity(0)
    if len(affinity) > 1:
        os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, affinity)


def arguments(description: str, *, litellm: bool = False) -> argparse.ArgumentParser:
    """The flags every relay benchmark takes (``--quick``, ``--no-write``, ``--litellm``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="seconds, not minutes")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    if litellm:
        parser.add_argument("--litellm", action="store_true", help="add LiteLLM's proxy")
    return parser


def publish(section: str, markdown: str, args: argparse.Namespace, began: float) -> None:
    """Print the section, write it to docs/benchmarks.md unless ``--no-write``, and the time."""
    print(markdown)
    if not args.no_write:
        print(f"wrote {write_section(section, markdown)}", file=sys.stderr)
    print(f"{section}: {time.monotonic() - began:.0f} s", file=sys.stderr)
