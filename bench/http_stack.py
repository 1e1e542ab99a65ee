"""Choose laneway's async HTTP client and server stack by measurement, not by reputation.

A gateway spends its life doing two things: accepting HTTP from callers (server) and
making HTTP to providers (client). On a loopback with a trivial upstream, the per-request
cost of each library is all that is left to see, so this compares candidates for both:

* clients (``aiohttp``, ``httpx2``, ``httpx``, ``pyreqwest``) POSTing JSON with a keep-alive
  pool to a fixed-response uvicorn upstream, at concurrency 1 (latency) and 32 (throughput);
* servers (raw ASGI on uvicorn with ``httptools`` or ``h11``, and ``granian``) serving the
  same fixed response, loaded by ``wrk`` at 1 and 32 connections.

Candidates not in the project venv (``httpx``, ``pyreqwest``, ``granian``) go into
``bench/.venv-tmp``.
Rounds are interleaved and each figure is the median of 3 rounds, so slow drift (thermal,
noisy neighbours) hits every candidate alike. The server/upstream is pinned to CPU 0 and
the load generator to CPU 1. Results go to ``docs/benchmarks.md`` (section
``http-stack``).

    .venv/bin/python bench/http_stack.py
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from _fixed_asgi import REQUEST_BODY
from _procs import LOOPBACK, Proc, free_port, pinned, spawn, wait_ready
from _report import median, provenance, write_section

if TYPE_CHECKING:
    from types import FrameType

COMMAND = ".venv/bin/python bench/http_stack.py"
BENCH_DIR = Path(__file__).resolve().parent
TMP_VENV = BENCH_DIR / ".venv-tmp"
PATH = "/v1/chat/completions"
ROUNDS = 3
CONCURRENCIES = (1, 32)
CLIENT_SECONDS = 2.5
SERVER_SECONDS = 3
SERVER_CPU, LOAD_CPU = 0, 1
MAIN_PY = sys.executable


@dataclass
class Series:
    """All rounds of one (candidate, concurrency) cell; summarised by median."""

    rps: list[float] = field(default_factory=list)
    p50_us: list[float] = field(default_factory=list)
    p99_us: list[float] = field(default_factory=list)

    def add(self, rps: float, p50_us: float, p99_us: float) -> None:
        self.rps.append(rps)
        self.p50_us.append(p50_us)
        self.p99_us.append(p99_us)


@dataclass
class Candidate:
    """One library under test, with where to run it from and its results per concurrency."""

    name: str
    versions: str
    python: str = MAIN_PY
    cmd: list[str] = field(default_factory=list)
    results: dict[int, Series] = field(default_factory=dict)

    def series(self, concurrency: int) -> Series:
        return self.results.setdefault(concurrency, Series())


# --------------------------------------------------------------------------- environment


def _tmp_python() -> Path:
    return TMP_VENV / "bin" / "python"


def _tmp_has(module: str) -> bool:
    if not _tmp_python().exists():
        return False
    probe = subprocess.run(
        [str(_tmp_python()), "-c", f"import {module}"], capture_output=True, check=False
    )
    return probe.returncode == 0


def _tmp_install(package: str) -> str | None:
    """Install ``package`` into the throwaway venv; return a skip reason on failure."""
    if not _tmp_python().exists():
        base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        subprocess.run(["uv", "venv", "-q", "--python", str(base), str(TMP_VENV)], check=True)
    proc = subprocess.run(
        ["uv", "pip", "install", "-q", "--python", str(_tmp_python()), package],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return f"`uv pip install {package}` failed: {proc.stderr.strip().splitlines()[-1:]}"
    return None


def ensure_tmp_packages(packages: tuple[str, ...]) -> dict[str, str | None]:
    """Idempotently provide extra candidates; maps package -> skip reason (None = ok).

    uvloop is always added so out-of-project candidates run on the same event loop.
    """
    reasons: dict[str, str | None] = {}
    for package in ("uvloop", *packages):
        reasons[package] = None if _tmp_has(package) else _tmp_install(package)
    if reasons["uvloop"]:
        return dict.fromkeys(packages, f"uvloop unavailable: {reasons['uvloop']}")
    return {p: reasons[p] for p in packages}


def _tmp_version(package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    return subprocess.run(
        [str(_tmp_python()), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def ensure_wrk() -> str | None:
    """Install Debian's wrk if missing (we run as root here); return a skip reason on failure."""
    if shutil.which("wrk"):
        return None
    for cmd in (["apt-get", "install", "-y", "-q", "wrk"], ["apt-get", "update", "-q"]):
        subprocess.run(cmd, capture_output=True, check=False)
    subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], capture_output=True, check=False)
    return None if shutil.which("wrk") else "wrk is not installed and apt-get could not install it"


def _v(package: str) -> str:
    return f"{package} {importlib.metadata.version(package)}"


# ------------------------------------------------------------------------------ clients


def client_candidates(extra: dict[str, str | None], skipped: list[str]) -> list[Candidate]:
    """aiohttp and httpx2 from the project venv; httpx and pyreqwest from the tmp venv when
    installable."""
    mine = importlib.metadata.version
    found = [Candidate("aiohttp", mine("aiohttp")), Candidate("httpx2", mine("httpx2"))]
    for name in ("httpx", "pyreqwest"):
        if extra[name] is None:
            found.append(Candidate(name, _tmp_version(name), str(_tmp_python())))
        else:
            skipped.append(f"client `{name}`: {extra[name]}")
    return found


def run_client(cand: Candidate, url: str, concurrency: int) -> None:
    """One measurement in a fresh process pinned to the load core."""
    cmd = [cand.python, str(BENCH_DIR / "_client_load.py"), cand.name, url]
    cmd += [str(concurrency), str(CLIENT_SECONDS)]
    out = subprocess.run(
        pinned(cmd, LOAD_CPU), capture_output=True, text=True, timeout=60, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"client {cand.name} c={concurrency} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    cand.series(concurrency).add(result["rps"], result["p50_us"], result["p99_us"])


def bench_clients(stack: ExitStack, candidates: list[Candidate]) -> str:
    """Start the uvicorn+httptools upstream and run all client rounds interleaved."""
    port = free_port()
    cmd = [MAIN_PY, str(BENCH_DIR / "_fixed_asgi.py"), "--port", str(port)]
    upstream = _start(stack, "upstream", cmd, port)
    url = f"http://{LOOPBACK}:{port}{PATH}"
    for round_no in range(1, ROUNDS + 1):
        for cand in candidates:
            for concurrency in CONCURRENCIES:
                run_client(cand, url, concurrency)
        print(f"  clients: round {round_no}/{ROUNDS} done", flush=True)
    upstream.stop()
    return _v("uvicorn") + " + " + _v("httptools") + " + " + _v("uvloop")


# ------------------------------------------------------------------------------ servers


def server_candidates(extra: dict[str, str | None], skipped: list[str]) -> list[Candidate]:
    """uvicorn with either HTTP parser from the project venv; granian from the tmp venv."""
    uv = _v("uvicorn")
    found = [
        Candidate("uvicorn+httptools", f"{uv}, {_v('httptools')}", cmd=["--http", "httptools"]),
        Candidate("uvicorn+h11", f"{uv}, {_v('h11')}", cmd=["--http", "h11"]),
    ]
    if extra["granian"] is None:
        found.append(Candidate("granian", _tmp_version("granian")))
    else:
        skipped.append(f"server `granian`: {extra['granian']}")
    return found


def _server_cmd(cand: Candidate, port: int) -> list[str]:
    if cand.name != "granian":
        return [MAIN_PY, str(BENCH_DIR / "_fixed_asgi.py"), "--port", str(port), *cand.cmd]
    granian = str(TMP_VENV / "bin" / "granian")
    return [
        granian, "--interface", "asgi", "--host", LOOPBACK, "--port", str(port),
        "--workers", "1", "--loop", "uvloop", "--http", "1", "--no-ws",
        "--log-level", "warning", "--no-access-log", "--working-dir", str(BENCH_DIR),
        "_fixed_asgi:app",
    ]  # fmt: skip


def _wrk_script(directory: str) -> str:
    """Lua for wrk: POST the request body and print a machine-readable summary."""
    path = Path(directory) / "post.lua"
    path.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = {json.dumps(REQUEST_BODY.decode())}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        "done = function(s, latency, _)\n"
        "  local e = s.errors\n"
        '  io.write(string.format(\'{"requests":%d,"duration_us":%d,"p50_us":%.1f,'
        '"p99_us":%.1f,"non2xx":%d,"errors":%d}\\n\',\n'
        "    s.requests, s.duration, latency:percentile(50), latency:percentile(99),\n"
        "    e.status, e.connect + e.read + e.write + e.timeout))\n"
        "end\n",
        encoding="utf-8",
    )
    return str(path)


def run_wrk(script: str, port: int, concurrency: int, seconds: float) -> dict[str, float]:
    """One wrk run (single thread, pinned to the load core); fails on any error response."""
    url = f"http://{LOOPBACK}:{port}{PATH}"
    cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "5s", "-s", script]
    out = subprocess.run(
        pinned([*cmd, url], LOAD_CPU), capture_output=True, text=True, timeout=60, check=True
    )
    line = next(ln for ln in reversed(out.stdout.splitlines()) if ln.startswith("{"))
    result: dict[str, float] = json.loads(line)
    if result["non2xx"] or result["errors"]:
        raise RuntimeError(f"wrk saw errors on :{port} c={concurrency}: {result}")
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


def bench_servers(stack: ExitStack, candidates: list[Candidate]) -> str:
    """Start every server once (all idle but one at a time), then interleave wrk rounds."""
    script = _wrk_script(stack.enter_context(tempfile.TemporaryDirectory()))
    ports: dict[str, int] = {}
    for cand in candidates:
        ports[cand.name] = free_port()
        _start(stack, cand.name, _server_cmd(cand, ports[cand.name]), ports[cand.name])
        run_wrk(script, ports[cand.name], 32, 1)  # warm-up, discarded
    for round_no in range(1, ROUNDS + 1):
        for cand in candidates:
            for concurrency in CONCURRENCIES:
                res = run_wrk(script, ports[cand.name], concurrency, SERVER_SECONDS)
                cand.series(concurrency).add(res["rps"], res["p50_us"], res["p99_us"])
        print(f"  servers: round {round_no}/{ROUNDS} done", flush=True)
    version = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    return version.stdout.split("[")[0].strip() or "wrk"  # "wrk debian/4.1.0-3+b2 [epoll] ..."


def _start(stack: ExitStack, name: str, cmd: list[str], port: int) -> Proc:
    """Spawn a server pinned to the server core; registered for stop before anything else."""
    proc = spawn(name, cmd, cpu=SERVER_CPU)
    stack.callback(proc.stop)
    wait_ready(proc, port, PATH, REQUEST_BODY)
    return proc


# ------------------------------------------------------------------------------- report


def _fmt(values: list[float], digits: int = 0) -> str:
    """Median with the min-max range of the rounds, so noise is visible next to the figure."""
    med = f"{median(values):,.{digits}f}"
    return f"{med} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def _table(candidates: list[Candidate], label: str) -> str:
    rows = [
        f"| {label} | version | c=1 p50 µs | c=1 p99 µs | c=1 req/s "
        "| c=32 req/s | c=32 p50 µs | c=32 p99 µs |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cand in candidates:
        one, many = cand.results[1], cand.results[32]
        rows.append(
            f"| {cand.name} | {cand.versions} | {_fmt(one.p50_us)} | {_fmt(one.p99_us)} "
            f"| {_fmt(one.rps)} | **{_fmt(many.rps)}** | {_fmt(many.p50_us)} "
            f"| {_fmt(many.p99_us)} |"
        )
    return "\n".join(rows)


def winner(candidates: list[Candidate]) -> str:
    """Best median throughput at c=32; say whether it also has the best c=1 latency."""
    best = max(candidates, key=lambda c: median(c.results[32].rps))
    fastest = min(candidates, key=lambda c: median(c.results[1].p50_us))
    ratio = median(best.results[32].rps) / min(median(c.results[32].rps) for c in candidates)
    latency = "also lowest c=1 p50" if fastest is best else f"lowest c=1 p50 is {fastest.name}"
    return f"**{best.name}** ({ratio:.1f}× the slowest at c=32; {latency})"


def render(
    clients: list[Candidate], servers: list[Candidate], notes: dict[str, str], skipped: list[str]
) -> str:
    """The markdown block for docs/benchmarks.md."""
    parts = [
        "## HTTP stack: async client and server",
        provenance(COMMAND).strip(),
        "Loopback only. Server/upstream pinned to CPU 0, load generator to CPU 1 (`taskset`); "
        "one server worker; uvloop everywhere; keep-alive; "
        f"{len(REQUEST_BODY)}-byte JSON POST answered by a fixed ~320-byte chat completion "
        "from a raw ASGI app (no framework). Each cell: median of "
        f"{ROUNDS} interleaved rounds (min–max). Closed loop: c = in-flight requests.",
    ]
    if clients:
        parts += [
            f"### Clients ({CLIENT_SECONDS} s per cell, upstream: {notes['upstream']})",
            _table(clients, "client"),
        ]
    if servers:
        parts += [f"### Servers ({SERVER_SECONDS} s per cell, {notes['wrk']} -t1)"]
        parts += [_table(servers, "server")]
    if skipped:
        parts.append("Skipped: " + "; ".join(skipped))
    conclusion = []
    if clients:
        conclusion.append(f"client {winner(clients)}")
    if servers:
        conclusion.append(f"server {winner(servers)}")
    parts.append("**Conclusion:** " + "; ".join(conclusion) + ".")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------------- main


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    """Turn SIGTERM/SIGHUP into SystemExit so the ExitStack stops every server."""
    raise SystemExit(128 + signum)


def main() -> int:
    """Run the whole comparison (about 2-3 minutes) and write the docs section."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    started = time.monotonic()
    skipped: list[str] = []
    extra = ensure_tmp_packages(("httpx", "pyreqwest", "granian"))
    wrk_reason = ensure_wrk()
    clients = client_candidates(extra, skipped)
    servers = [] if wrk_reason else server_candidates(extra, skipped)
    if wrk_reason:
        skipped.append(f"all servers: {wrk_reason}")
    notes: dict[str, str] = {}
    with ExitStack() as stack:
        print(f"clients: {[c.name for c in clients]}", flush=True)
        notes["upstream"] = bench_clients(stack, clients)
        if servers:
            print(f"servers: {[c.name for c in servers]}", flush=True)
            notes["wrk"] = bench_servers(stack, servers)
    markdown = render(clients, servers, notes, skipped)
    path = write_section("http-stack", markdown)
    print(markdown)
    print(f"\nwrote {path} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.chdir(BENCH_DIR.parent)
    raise SystemExit(main())
