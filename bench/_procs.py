"""Subprocess helpers for benchmarks: start servers pinned to a core, wait, always stop.

Each server runs in its own session (process group) so that stopping it also stops
any worker processes it forked (granian, nginx), and nothing else.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """Ask the kernel for an unused loopback port (racy in theory, fine on a quiet box)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def pinned(cmd: list[str], cpu: int | None) -> list[str]:
    """Prefix ``taskset`` so load generator and server don't fight over one of two cores."""
    if cpu is None or shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return cmd
    return ["taskset", "-c", str(cpu), *cmd]


@dataclass
class Proc:
    """A started server; :meth:`stop` is idempotent and kills its whole process group."""

    name: str
    popen: subprocess.Popen[bytes]
    log: IO[bytes]
    stopped: bool = field(default=False)

    def log_tail(self, limit: int = 2000) -> str:
        """Last bytes of the server's output, to explain a failed start."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-limit:]

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the group, escalate to SIGKILL after ``grace_s``."""
        if self.stopped:
            return
        self.stopped = True
        self._signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.popen.wait(timeout=grace_s)
        self._signal(signal.SIGKILL)  # reap stragglers a master may have left behind
        self.log.close()

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)


def spawn(
    name: str, cmd: list[str], cpu: int | None = None, env: dict[str, str] | None = None
) -> Proc:
    """Start ``cmd`` in a new session with output captured to a temp file."""
    # Owned by the returned Proc and closed in Proc.stop(), so no `with` here.
    log = tempfile.TemporaryFile(prefix=f"bench-{name}-")  # noqa: SIM115
    popen = subprocess.Popen(
        pinned(cmd, cpu),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    return Proc(name=name, popen=popen, log=log)


def post_once(
    port: int,
    path: str,
    body: bytes,
    timeout: float = 2.0,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, bytes]:
    """One blocking POST on loopback; used for readiness probes and smoke checks."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request("POST", path, body=body, headers=sent)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def wait_ready(proc: Proc, port: int, path: str, body: bytes, timeout_s: float = 20.0) -> None:
    """Poll with real POSTs until the server answers 200, or fail with its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            break
        with contextlib.suppress(OSError, http.client.HTTPException):
            status, _ = post_once(port, path, body)
            if status == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{proc.name} did not become ready on :{port}\n{proc.log_tail()}")
