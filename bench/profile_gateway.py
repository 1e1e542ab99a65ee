"""Where one request's CPU goes in ``laneway serve``, every feature on, under wrk load.

Starts the nginx upstream (CPU 1), ``laneway serve`` with the gateway benchmark's
every-feature configuration (telemetry to SQLite, metrics, a keyed request against
a key with an ``rpm`` limit, the JSON access log; CPU 0) and wrk at c=32 (CPU 1).
First a plain run measures CPU per request (process CPU time ÷ requests, no
profiler attached); then ``py-spy record --rate 1000`` samples the server under
the same load. Each sample is charged to one phase of a request by the innermost
frame that names one (``PHASES``), and the phase's share of the samples times the
CPU per request is its microseconds. Shares stay valid on a busy machine, where
absolute req/s do not; the CPU per request moves much less than req/s.

    .venv/bin/python bench/profile_gateway.py [--seconds 20] [--no-write]

Needs py-spy (``uv tool install py-spy``); writes the ``profile`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _proctree
import _wrk
from _procs import free_port, spawn
from _report import provenance, write_section
from gateway import wait_first_200
from nginx_upstream import start_nginx

SERVER_CPU, LOAD_CPU = 0, 1
COMMAND = ".venv/bin/python bench/profile_gateway.py"

PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("log (access log)", ("laneway/server/access_log.py",)),
    ("metrics", ("laneway/metrics/",)),
    (
        "record (call record, telemetry queue and its SQLite thread)",
        ("laneway/telemetry/", "laneway/engine/recording.py", "laneway/tracing/", "threading.py"),
    ),
    (
        "attempt (provider request, aiohttp to the upstream, parse the answer)",
        (
            "laneway/http/",
            "laneway/providers/",
            "laneway/engine/redaction.py",
            "aiohttp/",
            "request_body (laneway/wire/",
            "laneway/wire/decoding.py",
            "read_completion",
            "answer_vectors",
            "read_message",
            "read_generate",
        ),
    ),
    (
        "admission (key rpm, source quota and pick)",
        ("laneway/server/limits.py", "laneway/state/", "admission.py", "policy/quota.py"),
    ),
    ("auth (bearer key)", ("laneway/server/keys.py",)),
    (
        "render (answer body, headers, write)",
        (
            "laneway/server/render.py",
            "_body (laneway/wire/",
            "laneway/server/openai_",
            "send_reply",
            "tagging_send",
            "RequestResponseCycle.send ",
        ),
    ),
    (
        "parse (request id, body, JSON, checks)",
        (
            "laneway/server/parse.py",
            "laneway/server/dialect.py",
            "laneway/wire/openai/chat_request.py",
            "request_reader.py",
            "embed_call",
            "laneway/core/shapes.py",
            "laneway/server/request_ids.py",
            "laneway/server/browsers.py",
            "Gateway._json",
            "read_body",
        ),
    ),
    (
        "engine (call loop, deadline, fallback chain, cache lookup)",
        ("laneway/engine/", "laneway/policy/", "laneway/core/", "laneway/cache/"),
    ),
    ("gateway plumbing (routing, disconnect watch, in-flight count)", ("laneway/server/",)),
    ("HTTP server (uvicorn, httptools)", ("uvicorn/", "httptools")),
)
OTHER = "event loop: uvloop's C code (poll, socket syscalls, task switches) and the rest"
LOOP_FRAMES = ("Runner.run (", "asyncio_run (", "Server.run (")


def classify(stack: list[str]) -> str:
    """The phase of the innermost frame (leaf first) that names one.

    A sample whose innermost Python frame is the loop's ``run`` is in uvloop's C code
    (polling, socket reads and writes, task switching): the event loop.
    """
    if stack and stack[-1].startswith(LOOP_FRAMES):
        return OTHER
    for frame in reversed(stack):
        for phase, marks in PHASES:
            if any(mark in frame for mark in marks):
                return phase
    return OTHER


def read_raw(path: Path) -> collections.Counter[str]:
    """Samples per phase from py-spy's ``--format raw`` (collapsed stacks)."""
    counts: collections.Counter[str] = collections.Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, n = line.rpartition(" ")
        if n.isdigit():
            counts[classify(stack.split(";"))] += int(n)
    return counts


def cpu_per_request(script: str, pid: int, port: int, seconds: int) -> tuple[float, float]:
    """(CPU µs per request, req/s) of one wrk run at c=32, no profiler attached."""
    before = _proctree.cpu_seconds(pid)
    result = _wrk.run(script, port, setup.PATH, 32, seconds, LOAD_CPU)
    spent = _proctree.cpu_seconds(pid) - before
    return spent / max(result.requests, 1) * 1e6, result.ok_rps


def profile(py_spy: str, script: str, pid: int, port: int, seconds: int, out: Path) -> None:
    """py-spy record while wrk loads the server (the profiler stops first)."""
    url = f"http://127.0.0.1:{port}{setup.PATH}"
    wrk = ["wrk", "-t1", "-c32", f"-d{seconds + 3}s", "-s", script, url]
    load = subprocess.Popen(["taskset", "-c", str(LOAD_CPU), *wrk], stdout=subprocess.DEVNULL)
    try:
        time.sleep(1)
        record = ["record", "--pid", str(pid), "--rate", "1000", "--duration", str(seconds)]
        raw = ["--format", "raw", "--output", str(out), "--nonblocking"]
        subprocess.run([py_spy, *record, *raw], check=True, capture_output=True)
    finally:
        load.wait()


def floor_cpu(script: str, upstream: str) -> tuple[float, float]:
    """CPU µs per request (and req/s) of the bare forwarder, the floor, under the same load."""
    port = free_port()
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "_bare_proxy.py"), str(port)]
    bare = spawn("bare", [*cmd, upstream], cpu=SERVER_CPU)
    try:
        wait_first_200(bare, port, setup.request_body(setup.LANE), 20.0)
        _wrk.run(script, port, setup.PATH, 32, 2, LOAD_CPU)  # warm-up
        return cpu_per_request(script, bare.popen.pid, port, 5)
    finally:
        bare.stop()


def render(
    counts: collections.Counter[str], cpu_us: float, rps: float, seconds: int, floor_us: float
) -> str:
    """The section: one row per phase, its share of the samples and its microseconds."""
    total = sum(counts.values())
    lines = [
        "## Profile: where a request's CPU goes (`laneway serve`, every feature on)",
        provenance(COMMAND).strip(),
        f"Load: wrk c=32, 90-byte keyed chat POST, nginx upstream; {seconds} s of "
        f"`py-spy record --rate 1000 --nonblocking` ({total:,} samples). CPU per request "
        f"from a run without the profiler: **{cpu_us:,.0f} µs** ({rps:,.0f} req/s, shared "
        f"machine); the bare uvicorn + aiohttp forwarder (the floor), same load, same run: "
        f"**{floor_us:,.0f} µs** ({cpu_us / floor_us:.2f}× it). Each sample is charged to the "
        "innermost frame that names a phase.",
        "",
        "| phase | share of samples | µs per request |",
        "|---|---:|---:|",
    ]
    order = [name for name, _ in PHASES] + [OTHER]
    for name in order:
        share = counts.get(name, 0) / max(total, 1)
        lines.append(f"| {name} | {share:.1%} | {share * cpu_us:,.0f} |")
    lines.append(f"| **total** | 100% | **{cpu_us:,.0f}** |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20, help="profiled seconds (default 20)")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    parser.add_argument("--raw", type=Path, help="also keep py-spy's collapsed stacks here")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path.home() / ".local/bin/py-spy")
    if not Path(py_spy).exists():
        print("error: py-spy not found: uv tool install py-spy", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
        scratch = Path(tmp)
        nginx = start_nginx(free_port(), cpu=LOAD_CPU)
        try:
            config = setup.every_feature_config(nginx.url, scratch / "telemetry.sqlite3")
            path = setup.write_yaml(scratch / "laneway.yaml", config)
            port = free_port()
            server = spawn("laneway", setup.laneway_cmd(path, port, scratch), cpu=SERVER_CPU)
            try:
                wait_first_200(server, port, setup.request_body(setup.LANE), 20.0)
                script = _wrk.write_script(
                    scratch / "post.lua", setup.request_body(setup.LANE), setup.AUTH_HEADERS
                )
                _wrk.run(script, port, setup.PATH, 32, 2, LOAD_CPU)  # warm-up
                cpu_us, rps = cpu_per_request(script, server.popen.pid, port, 5)
                raw = scratch / "profile.txt"
                profile(py_spy, script, server.popen.pid, port, args.seconds, raw)
                counts = read_raw(raw)
                if args.raw is not None:
                    shutil.copyfile(raw, args.raw)
            finally:
                server.stop()
            floor_us, _ = floor_cpu(script, nginx.url)
        finally:
            nginx.stop()
    markdown = render(counts, cpu_us, rps, args.seconds, floor_us)
    print(markdown)
    if not args.no_write:
        print(f"wrote {write_section('profile', markdown)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
