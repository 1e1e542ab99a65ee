"""``laneway serve --workers 2`` vs one worker, its memory, and the cost of Redis state.

Every feature on (telemetry, metrics, a key with ``rpm``, access log), nginx answering
from memory as the upstream, wrk as the load. Rows:

- 1 worker, in-process state (``state.url`` unset);
- 1 worker, shared state in Redis (``state.url: redis://…``): the price of the Redis
  round trips (source quota and the key's ``rpm``) on one worker's throughput;
- 2 workers, in-process state.

Placement on this 2-core box: one worker runs alone on CPU 0 with nginx and wrk on
CPU 1, as in the gateway benchmark. Two workers need both cores, so nginx and wrk then
share them with the workers (``taskset`` cannot isolate a load generator from a
server that uses every core): the 2-worker req/s is a lower bound, and its
*capacity* (cores given ÷ CPU per request) is what 2 cores could serve. Memory is the
whole process tree's PSS (and summed VmRSS) after a load of ``--rss-seconds``.

    .venv/bin/python bench/workers.py [--quick] [--rss-seconds 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _proctree
import _relay
import _wrk
from _procs import free_port
from _report import median, provenance
from nginx_upstream import start_nginx

COMMAND = ".venv/bin/python bench/workers.py"
REDIS_URL = os.environ.get("LANEWAY_BENCH_REDIS", "redis://127.0.0.1:6379/0")
TARGET_SPEEDUP, TARGET_RSS_RATIO, TARGET_REDIS_CPU = 1.7, 1.6, 0.25
TARGET_RSS_MIB = 55.0


def measure(
    scratch: Path, server: _relay.Server, cpu: int | None, seconds: int, rounds: int
) -> dict[str, float]:
    """c=32 req/s and CPU µs per request (median of ``rounds``)."""
    script = _wrk.write_script(
        scratch / "post.lua", setup.request_body(setup.LANE), setup.AUTH_HEADERS
    )
    _wrk.run(script, server.port, setup.PATH, 32, 2, cpu)  # warm-up
    rps, cpu_us = [], []
    for _ in range(rounds):
        before = _proctree.cpu_seconds(server.pid)
        r = _wrk.run(script, server.port, setup.PATH, 32, seconds, cpu)
        cpu_us.append((_proctree.cpu_seconds(server.pid) - before) / max(r.requests, 1) * 1e6)
        rps.append(r.ok_rps)
        if r.failed:
            print(f"    ⚠ {r.failed} failed", flush=True)
    return {"rps": median(rps), "cpu_us": median(cpu_us)}


def memory_after_load(
    scratch: Path, server: _relay.Server, cpu: int | None, seconds: int
) -> dict[str, float]:
    """The tree's summed VmRSS and Pss after ``seconds`` of c=32 load (runs of at most 60 s)."""
    script = _wrk.write_script(
        scratch / "post.lua", setup.request_body(setup.LANE), setup.AUTH_HEADERS
    )
    left = seconds
    while left > 0:
        _wrk.run(script, server.port, setup.PATH, 32, min(left, 60), cpu)
        left -= 60
    return {"rss": _proctree.rss_mib(server.pid), "pss": _proctree.pss_mib(server.pid)}


def config(nginx_url: str, scratch: Path, state_url: str | None) -> dict[str, Any]:
    lanes = {setup.LANE: setup.openai_lane(f"{nginx_url}/v1")}
    key = f"bench-{os.getpid()}"  # the key's window in Redis is this run's alone
    return setup.feature_config(
        lanes, scratch / "telemetry.sqlite3", key_name=key, state_url=state_url
    )


def run(args: argparse.Namespace, scratch: Path) -> dict[str, dict[str, float]]:
    seconds, rounds = (2, 1) if args.quick else (5, 3)
    variants = [
        ("1 worker, in-process state", 1, None, 0, 1),
        ("1 worker, Redis state", 1, REDIS_URL, 0, 1),
        ("2 workers, in-process state", 2, None, None, None),
    ]
    rows: dict[str, dict[str, float]] = {}
    with ExitStack() as stack:
        nginx = start_nginx(free_port(), cpu=1)
        stack.callback(nginx.stop)
        for name, workers, state, server_cpu, load_cpu in variants:
            print(name, flush=True)
            with ExitStack() as inner:
                started = time.monotonic()
                server = _relay.laneway(
                    inner,
                    config(nginx.url, scratch, state),
                    scratch,
                    server_cpu,
                    name=f"laneway-{workers}-{'redis' if state else 'memory'}",
                    workers=workers,
                )
                _relay.wait_chat(server, setup.LANE)
                ready_s = time.monotonic() - started
                figures = measure(scratch, server, load_cpu, seconds, rounds)
                figures["ready_s"] = ready_s
                if state is None:
                    figures |= memory_after_load(scratch, server, load_cpu, args.rss_seconds)
                rows[name] = figures
                print(f"    {figures}", flush=True)
    return rows


def render(rows: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    one, redis, two = rows.values()
    speedup = two["rps"] / one["rps"]
    capacity_one = 1e6 / one["cpu_us"]
    capacity_two = 2e6 / two["cpu_us"]
    redis_cost = 1 - redis["rps"] / one["rps"]
    redis_cpu = redis["cpu_us"] / one["cpu_us"] - 1
    pss_ratio = two["pss"] / one["pss"]
    lines = [
        "## Workers: `--workers 2` vs one, memory, and Redis state",
        provenance(COMMAND + (" --quick" if args.quick else "")).strip(),
        "Every feature on (telemetry, metrics, a key with `rpm`, access log); nginx answering "
        "from memory upstream; wrk `-t1 -c32`. One worker runs alone on CPU 0 with nginx and "
        "wrk on CPU 1. Two workers need both cores, so nginx and wrk then share them with the "
        "workers (`taskset` cannot isolate a load generator from a server given every core "
        "of a 2-core box): the 2-worker req/s is a lower bound, and *capacity* (cores ÷ CPU "
        "per request) is what the cores could serve with the load elsewhere. Memory of the process "
        f"tree (supervisor + workers) after **{args.rss_seconds} s** of c=32 load: *PSS*, each "
        "page split among the processes sharing it (what the tree costs the machine: the "
        "workers are forked from the supervisor and share the modules it imported), and summed "
        "VmRSS, which counts a shared page once per process. "
        f"Redis: `{REDIS_URL}`, the source quota and the key's `rpm` kept there.",
        "",
        "| row | c=32 req/s | CPU µs/request | capacity req/s (cores ÷ CPU/request) "
        "| PSS of the tree MiB | VmRSS summed MiB | ready s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f in rows.items():
        cores = 2 if name.startswith("2") else 1
        pss, rss = (f"{f[k]:.1f}" if k in f else "—" for k in ("pss", "rss"))
        lines.append(
            f"| {name} | {f['rps']:,.0f} | {f['cpu_us']:,.0f} | {cores * 1e6 / f['cpu_us']:,.0f} "
            f"| {pss} | {rss} | {f['ready_s']:.2f} |"
        )

    def mark(ok: bool) -> str:
        return "met" if ok else "**missed**"

    lines += [
        "",
        "Targets (issues 16 and 25):",
        "",
        f"- `--workers 2` ≥ {TARGET_SPEEDUP:g}× one worker: measured {speedup:.2f}× "
        f"({mark(speedup >= TARGET_SPEEDUP)}), with wrk and nginx on the same 2 cores; by "
        f"CPU per request, 2 cores serve {capacity_two / capacity_one:.2f}× one core "
        f"({mark(capacity_two / capacity_one >= TARGET_SPEEDUP)}: what a machine with cores "
        "to spare for the load would show)",
        f"- one worker ≤ {TARGET_RSS_MIB:g} MiB after the load (issue 25): VmRSS "
        f"{one['rss']:.1f} MiB ({mark(one['rss'] <= TARGET_RSS_MIB)}), PSS {one['pss']:.1f} MiB "
        "(PSS splits the shared libraries' pages with every other process mapping them, so it "
        "is lower on a host running more Python)",
        f"- process tree ≤ {TARGET_RSS_RATIO:g}× one worker's memory (PSS): {two['pss']:.1f} vs "
        f"{one['pss']:.1f} MiB = {pss_ratio:.2f}× ({mark(pss_ratio <= TARGET_RSS_RATIO)}; "
        f"summed VmRSS {two['rss']:.1f} vs {one['rss']:.1f} MiB)",
        f"- Redis state costs ≤ +{TARGET_REDIS_CPU:.0%} CPU per request (issue 25): "
        f"{redis_cpu:+.0%} ({mark(redis_cpu <= TARGET_REDIS_CPU)}), {redis_cost:.0%} fewer req/s",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = _relay.arguments("workers benchmark")
    parser.add_argument(
        "--rss-seconds", type=int, default=None, help="load before RSS (default 300; quick 5)"
    )
    args = parser.parse_args()
    if args.rss_seconds is None:
        args.rss_seconds = 5 if args.quick else 300
    _relay.exit_on_signal()
    setup.compile_laneway()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        rows = run(args, Path(tmp))
    markdown = render(rows, args)
    _relay.publish("workers", markdown, args, began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
