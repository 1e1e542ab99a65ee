"""Drive ``wrk`` with a POST body and read back a machine-readable summary.

A C load generator is used for server benchmarks so that the client is never the
bottleneck of a Python gateway. Unlike ``http_stack.run_wrk`` this never raises on
error responses: a gateway benchmark must *report* non-2xx and socket errors next to
the figures (an erroring run can look fast), so the counts are returned instead.
"""

from __future__ import annotations

import json
import resource
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from _procs import LOOPBACK, pinned

_DONE = (
    "done = function(s, latency, _)\n"
    "  local e = s.errors\n"
    '  io.write(string.format(\'{"requests":%d,"duration_us":%d,"p50_us":%.1f,'
    '"p99_us":%.1f,"non2xx":%d,"errors":%d}\\n\',\n'
    "    s.requests, s.duration, latency:percentile(50), latency:percentile(99),\n"
    "    e.status, e.connect + e.read + e.write + e.timeout))\n"
    "end\n"
)


@dataclass(frozen=True)
class WrkResult:
    """One wrk run; ``client_cpu_s`` is wrk's own CPU, to show the load core had headroom."""

    requests: int
    duration_s: float
    p50_us: float
    p99_us: float
    non2xx: int
    errors: int
    client_cpu_s: float

    @property
    def ok_rps(self) -> float:
        """Successful (2xx) responses per second: a fast error is not throughput."""
        return (self.requests - self.non2xx) / self.duration_s

    @property
    def failed(self) -> int:
        """Non-2xx responses plus socket errors (connect, read, write, timeout)."""
        return self.non2xx + self.errors


def write_script(path: Path, body: bytes, headers: Mapping[str, str] | None = None) -> str:
    """Lua that POSTs ``body`` as JSON (with ``headers``) and prints the summary as JSON."""
    extra = "".join(
        f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}\n"
        for name, value in (headers or {}).items()
    )
    path.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = {json.dumps(body.decode())}\n"
        'wrk.headers["Content-Type"] = "application/json"\n' + extra + _DONE,
        encoding="utf-8",
    )
    return str(path)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    script: str, port: int, path: str, concurrency: int, seconds: int, cpu: int | None
) -> WrkResult:
    """One single-threaded wrk run pinned to ``cpu`` (``None``: unpinned); keep-alive, 5 s timeout.

    wrk takes whole seconds only (``-d0.5s`` is an error), hence ``seconds: int``.
    """
    url = f"http://{LOOPBACK}:{port}{path}"
    cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "5s", "-s", script]
    before = _children_cpu_s()
    out = subprocess.run(
        pinned([*cmd, url], cpu), capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    client_cpu = _children_cpu_s() - before
    if out.returncode != 0:
        raise RuntimeError(f"wrk exited {out.returncode}: {out.stderr.strip()[-500:]}")
    line = next((ln for ln in reversed(out.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    raw = json.loads(line)
    return WrkResult(
        requests=int(raw["requests"]),
        duration_s=raw["duration_us"] / 1e6,
        p50_us=float(raw["p50_us"]),
        p99_us=float(raw["p99_us"]),
        non2xx=int(raw["non2xx"]),
        errors=int(raw["errors"]),
        client_cpu_s=client_cpu,
    )


def version() -> str:
    """``wrk debian/4.1.0-3+b2`` or similar, for the provenance line."""
    out = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).split("[")[0].strip() or "wrk"
