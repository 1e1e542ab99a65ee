"""One ``laneway serve`` process for the tests that read its access log, read as it runs.

Starting ``laneway serve`` costs a second or more (a fresh interpreter and
its imports), most of such a test. The access-log tests share one process
(the session's ``logged_serve`` fixture): its config holds every lane they
call, each test calls its own lanes, and reads the JSON lines of those lanes
from the output as they are written (the access log flushes every write).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec
from tests.server.test_serve_cli import laneway_serve

SECRET = "sk-laneway-test-0123456789"
"""The callers' key, read from ``TEST_LANEWAY_KEY``: it must never be logged."""
UNSET = "LANEWAY_TEST_FALLBACK_UNSET_KEY"
"""The variable the ``primary`` lane's key is read from, never set: the lane is not ready."""
AUTH = {"authorization": f"Bearer {SECRET}"}


@dataclass
class LoggedServe:
    """The running process: its URL, its banner, and the output read after the banner."""

    proc: subprocess.Popen[bytes]
    url: str
    banner: str
    output: str = ""

    def log_lines(self, lanes: set[str], count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The JSON lines of ``lanes``, once at least ``count`` of them are out."""
        deadline = time.monotonic() + timeout
        while len(lines := self._lines(lanes)) < count:
            self._read(deadline - time.monotonic())
        return lines

    def _lines(self, lanes: set[str]) -> list[dict[str, Any]]:
        parsed = [json.loads(line) for line in self.output.splitlines() if line.startswith("{")]
        return [line for line in parsed if line.get("lane") in lanes]

    def _read(self, timeout: float) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            assert timeout > 0 and selector.select(timeout), f"no log line: {self.output!r}"
        chunk = os.read(fd, 65536)
        assert chunk, f"laneway serve exited: {self.output!r}"
        self.output += chunk.decode()


def logged_config(sim: RunningSim, folder: Path) -> Path:
    """The access-log tests' lanes: ``good``, ``bad``, and ``primary`` served by ``rescue``."""
    ok, refused = sim_url(sim, unique_spec("ok")), sim_url(sim, unique_spec("status=401"))
    path = folder / "laneway.yaml"
    path.write_text(
        "lanes:\n"
        f"  good:\n    sources: [{{base_url: '{ok}', model: m}}]\n"
        f"  bad:\n    sources: [{{base_url: '{refused}', model: m}}]\n"
        "  primary:\n"
        "    fallback_lanes: [rescue]\n"
        f"    sources: [{{base_url: '{ok}', model: m, api_key: os.environ/{UNSET}}}]\n"
        f"  rescue:\n    sources: [{{base_url: '{ok}', model: m}}]\n"
        "server:\n  keys:\n    - {name: team-a, key: os.environ/TEST_LANEWAY_KEY}\n"
        "telemetry: {url: none}\n"
    )
    return path


@contextmanager
def logged_serve(sim: RunningSim, folder: Path) -> Iterator[LoggedServe]:
    """``laneway serve`` of ``logged_config`` until the block ends."""
    config = logged_config(sim, folder)
    env = {"TEST_LANEWAY_KEY": SECRET}
    with laneway_serve("--config", str(config), env=env) as (proc, url, banner):
        yield LoggedServe(proc, url, banner)
