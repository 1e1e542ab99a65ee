"""Replicas of ``laneway serve`` behind nginx, sharing state through Redis.

1, 2 and 3 replicas (one worker each, every feature on, ``state.url`` Redis) behind a
real load balancer: nginx with an ``upstream`` block (keep-alive to the replicas),
its config generated in a temp dir, run as a non-daemon child on a loopback port.
Two measurements per replica count:

- throughput: wrk c=32 through the balancer to a lane on the fixed nginx upstream;
  req/s in all and per replica, CPU per request over every replica's process tree;
- exact quotas: a lane whose one deployment has ``rpm: R``, on the counting upstream
  (``_stamp_upstream.py``, which logs every chat request it serves), offered more than
  R per minute through the balancer; the most requests the upstream saw in any 60 s
  must not pass R. Every replica count gets its own lane name, so no window carries over.

This machine has 2 cores: replicas, balancer, upstreams and wrk share them, so the
per-replica figures show what adding a replica costs and keeps, not more cores.

    .venv/bin/python bench/scaleout.py [--quick]
"""

from __future__ import annotations

import argparse
import bisect
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _proctree
import _relay
import _wrk
from _procs import LOOPBACK, free_port, spawn
from _report import provenance
from nginx_upstream import nginx_binary, start_nginx

COMMAND = ".venv/bin/python bench/scaleout.py"
REDIS_URL = os.environ.get("LANEWAY_BENCH_REDIS", "redis://127.0.0.1:6379/0")
WINDOW_S = 60.0


def balancer_config(prefix: Path, port: int, replicas: list[int]) -> str:
    """nginx.conf: one ``upstream`` block over the replicas, keep-alive to each."""
    servers = "\n".join(f"        server {LOOPBACK}:{p};" for p in replicas)
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 10000000;
{temp}
    upstream laneway {{
{servers}
        keepalive 64;
    }}
    server {{
        listen {LOOPBACK}:{port} backlog=4096;
        location / {{
            proxy_pass http://laneway;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


def start_balancer(stack: ExitStack, replicas: list[_relay.Server]) -> _relay.Server:
    prefix = Path(tempfile.mkdtemp(prefix="bench-lb-"))
    stack.callback(shutil.rmtree, prefix, ignore_errors=True)
    port = free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(balancer_config(prefix, port, [r.port for r in replicas]), encoding="utf-8")
    proc = spawn("balancer", [nginx_binary(), "-p", str(prefix), "-c", str(conf), "-e", "stderr"])
    stack.callback(proc.stop)
    server = _relay.Server(proc, port)
    _relay.wait_chat(server, setup.LANE)
    return server


def most_in_window(times: list[float]) -> int:
    """The most requests in any ``WINDOW_S`` seconds (each window opening at a request)."""
    ordered = sorted(times)
    return max(
        (bisect.bisect_left(ordered, t + WINDOW_S) - i for i, t in enumerate(ordered)), default=0
    )


def one_count(
    args: argparse.Namespace, scratch: Path, nginx_url: str, counter: _relay.Server, n: int
) -> dict[str, float]:
    seconds = 2 if args.quick else 5
    rpm_lane = f"bench-rpm-{os.getpid()}-{n}"
    counted_url = f"{counter.url}/v1"
    lanes = {
        setup.LANE: setup.openai_lane(f"{nginx_url}/v1"),
        rpm_lane: {
            "kind": "chat",
            "deadline": "2s",
            "sources": [
                {
                    "provider": "openai",
                    "base_url": counted_url,
                    "model": f"{setup.UPSTREAM_MODEL}-{n}",
                    "rpm": args.rpm,
                }
            ],
        },
    }
    with ExitStack() as stack:
        replicas = []
        for i in range(n):
            workdir = scratch / f"r{n}-{i}"
            workdir.mkdir()
            config = setup.feature_config(
                lanes,
                workdir / "telemetry.sqlite3",
                key_name=f"bench-{os.getpid()}-{n}",
                state_url=REDIS_URL,
            )
            replicas.append(_relay.laneway(stack, config, workdir, None, name=f"replica-{i}"))
        for replica in replicas:
            _relay.wait_chat(replica, setup.LANE)
        balancer = start_balancer(stack, replicas)
        script = _wrk.write_script(
            scratch / "post.lua", setup.request_body(setup.LANE), setup.AUTH_HEADERS
        )
        _wrk.run(script, balancer.port, setup.PATH, 32, 1, None)  # warm-up
        before = sum(_proctree.cpu_seconds(r.pid) for r in replicas)
        r = _wrk.run(script, balancer.port, setup.PATH, 32, seconds, None)
        spent = sum(_proctree.cpu_seconds(r.pid) for r in replicas) - before
        figures = {"rps": r.ok_rps, "cpu_us": spent / max(r.requests, 1) * 1e6, "failed": r.failed}
        seen_before = len(_relay.stats(counter)["chat_times"])
        rpm_script = _wrk.write_script(
            scratch / "rpm.lua", setup.request_body(rpm_lane), setup.AUTH_HEADERS
        )
        began = time.monotonic()
        q = _wrk.run(rpm_script, balancer.port, setup.PATH, 8, args.rpm_seconds, None)
        times = _relay.stats(counter)["chat_times"][seen_before:]
        times = [t for t in times if t >= began]
        figures |= {
            "offered": float(q.requests),
            "answered": float(q.requests - q.non2xx),
            "upstream": float(len(times)),
            "most_60s": float(most_in_window(times)),
        }
    print(f"  {n} replica(s): {figures}", flush=True)
    return figures


def render(rows: dict[int, dict[str, float]], args: argparse.Namespace) -> str:
    one = rows[1]["rps"]
    lines = [
        "## Scale-out: replicas behind nginx, state in Redis",
        provenance(COMMAND + (" --quick" if args.quick else "")).strip(),
        "Replicas: `laneway serve` (one worker each, every feature on: telemetry, metrics, a "
        f"key with `rpm`, access log; `state.url: {REDIS_URL}`). Balancer: nginx `upstream` "
        "block (round robin, keep-alive 64), generated config, non-daemon child on loopback. "
        "Throughput: wrk `-t1 -c32` to a lane on nginx answering from memory. Quota: a lane "
        f"whose one deployment has `rpm: {args.rpm}` on a counting upstream, wrk `-c8` for "
        f"{args.rpm_seconds} s through the balancer; counted at the upstream. All processes "
        "share this machine's 2 cores: adding replicas adds no cores here, so per-replica "
        "req/s falls; the CPU per request shows what the balancer and shared state cost.",
        "",
        "| replicas | c=32 req/s | per replica | vs 1 replica | CPU µs/request (all replicas) "
        "| quota calls offered | answered 2xx | seen by the upstream | most in any 60 s "
        f"| rpm {args.rpm} held |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n, f in rows.items():
        held = "yes" if f["most_60s"] <= args.rpm else "**no: exceeded**"
        lines.append(
            f"| {n} | {f['rps']:,.0f} | {f['rps'] / n:,.0f} | {f['rps'] / one:.2f}× "
            f"| {f['cpu_us']:,.0f} | {f['offered']:,.0f} | {f['answered']:,.0f} "
            f"| {f['upstream']:,.0f} | {f['most_60s']:,.0f} | {held} |"
        )
    if any(f["failed"] for f in rows.values()):
        lines.append(
            "\n⚠ throughput runs had failed requests: "
            + ", ".join(f"{n}: {f['failed']:.0f}" for n, f in rows.items())
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = _relay.arguments("scale-out benchmark")
    parser.add_argument("--rpm", type=int, default=120, help="the counted deployment's rpm")
    parser.add_argument("--rpm-seconds", type=int, default=None, help="quota run (default 20)")
    args = parser.parse_args()
    if args.rpm_seconds is None:
        args.rpm_seconds = 4 if args.quick else 20
    _relay.exit_on_signal()
    began = time.monotonic()
    rows: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, ExitStack() as stack:
        nginx = start_nginx(free_port())
        stack.callback(nginx.stop)
        counter = _relay.stamp_upstream(stack, None)
        for n in (1, 2, 3):
            rows[n] = one_count(args, Path(tmp), nginx.url, counter, n)
    markdown = render(rows, args)
    _relay.publish("scaleout", markdown, args, began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
