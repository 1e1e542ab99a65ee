"""``laneway serve`` vs the bare upstream vs Portkey and LiteLLM, under a C load generator.

Answers the gateway targets of the issue with figures anyone can re-run: how many
requests per second one laneway worker forwards, how much latency it adds over calling
the upstream directly, what each request costs in CPU, how much memory it holds and
how fast it is ready. nginx answering from memory is the upstream (the physical limit
on this machine); the Portkey gateway 1.15.2 (Node, ``bench/portkey_env.py``) and
LiteLLM 1.96.2 run against the same nginx for the comparison.

Placement on the 2 cores, the same for every row: the server under test alone on
CPU 0; nginx and wrk together on CPU 1 (this script too, mostly asleep). Each gateway
thus has a whole core, and the C programs on the other core use a fraction of theirs
(the report shows how much). Two reference rows make the figures interpretable: nginx
moved to CPU 0 (what one inter-core round trip costs on this VM), and a bare
uvicorn + aiohttp forwarder (the floor of the stack laneway is built on).

Rounds are interleaved (each row once per round, order rotated), each server is started
fresh every round (time-to-ready gets 3 samples; no row inherits another's heat), the
run waits briefly for the shared machine to be quiet before each round, and every figure
is the median of the rounds. Results: ``docs/benchmarks.md`` (section ``gateway``).

    bash bench/gateway.sh
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cpustat
import _gateway_report as report
import _gateway_setup as setup
import _proctree
import _wrk
import litellm_env
import portkey_env
from _procs import Proc, free_port, post_once, spawn
from nginx_upstream import NginxHandle, start_nginx

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import FrameType

GATEWAY_CPU, LOAD_CPU = 0, 1
"""Server under test on CPU 0; nginx and wrk share CPU 1 (see the module docstring)."""
ROUNDS = 3
SECONDS = 5
WARMUP_S = 2
CONCURRENCIES = (1, 32)
PLAIN = "laneway, plain lane (nothing on)"
"""No key, metrics, telemetry or access log: issue 25 asks ≥ 0.8× the floor of it."""
READY_POLL_S = 0.005
QUIET_WAIT_S = 8.0
"""Longest wait for other people's jobs to finish before one round of one row..."""
QUIET_BUDGET_S = 45.0
"""...and over the whole run, so a busy box cannot stretch it past ~6 minutes."""

Kind = Literal["direct", "nginx", "spawn"]


@dataclass(frozen=True)
class Sample:
    """One wrk run with the CPU spent during it by the server, nginx, and everyone else."""

    wrk: _wrk.WrkResult
    server_cpu_s: float
    upstream_cpu_s: float
    other_cpu_s: float


@dataclass
class Row:
    """One line of the report: how to start it, and what every round measured.

    ``kind``: ``direct`` loads the shared nginx on CPU 1; ``nginx`` starts another
    nginx on CPU 0; ``spawn`` starts ``start(port, workdir)`` on CPU 0.
    """

    name: str
    model: str
    kind: Kind = "spawn"
    start: Callable[[int, Path], list[str]] | None = None
    env: dict[str, str] | None = None
    ready_timeout_s: float = 20.0
    db: Path | None = None
    headers: dict[str, str] = field(default_factory=lambda: dict(setup.AUTH_HEADERS))
    """What every request to the row carries (Portkey's routing headers beside the key)."""
    samples: dict[int, list[Sample]] = field(default_factory=dict)
    rss_mib: list[float] = field(default_factory=list)
    ready_s: list[float] = field(default_factory=list)
    db_bytes: list[int] = field(default_factory=list)

    def add(self, concurrency: int, sample: Sample) -> None:
        self.samples.setdefault(concurrency, []).append(sample)


@dataclass
class Bench:
    """Shared state of one run: the upstream, the scratch dir, wrk scripts, quiet budget."""

    nginx: NginxHandle
    scratch: Path
    rounds: int = ROUNDS
    seconds: int = SECONDS
    litellm: bool = True
    portkey: bool = True
    scripts: dict[str, str] = field(default_factory=dict)
    quiet_left_s: float = QUIET_BUDGET_S

    def script(self, row: Row) -> str:
        """The Lua script POSTing the row's request (written once per model and headers)."""
        key = repr((row.model, sorted(row.headers.items())))
        if key not in self.scripts:
            path = self.scratch / f"post-{len(self.scripts)}.lua"
            self.scripts[key] = _wrk.write_script(path, setup.request_body(row.model), row.headers)
        return self.scripts[key]

    def wait_quiet(self) -> None:
        """Let other people's jobs finish (briefly) so they do not land in this round."""
        if self.quiet_left_s > 0:
            self.quiet_left_s -= _cpustat.wait_quiet(min(QUIET_WAIT_S, self.quiet_left_s))


# ------------------------------------------------------------------------------ measuring


def wait_first_200(
    proc: Proc,
    port: int,
    body: bytes,
    timeout_s: float,
    headers: dict[str, str] = setup.AUTH_HEADERS,
) -> None:
    """Poll with real chat requests until one is answered 200 with a chat completion."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.popen.poll() is None:
        try:
            status, reply = post_once(port, setup.PATH, body, headers=headers)
        except OSError:
            time.sleep(READY_POLL_S)
            continue
        if status == 200 and b"chat.completion" in reply:
            return
        time.sleep(READY_POLL_S)
    raise RuntimeError(f"{proc.name} did not become ready on :{port}\n{proc.log_tail()}")


def launch(stack: ExitStack, bench: Bench, row: Row) -> tuple[int, int]:
    """Start ``row``'s server on the gateway core; return (pid, port) once it answers."""
    port = free_port()
    started = time.monotonic()
    if row.kind == "nginx":
        handle = start_nginx(port, cpu=GATEWAY_CPU)
        stack.callback(handle.stop)
        pid = handle.proc.popen.pid
    else:
        assert row.start is not None
        workdir = Path(tempfile.mkdtemp(prefix="run-", dir=bench.scratch))
        proc = spawn(row.name, row.start(port, workdir), cpu=GATEWAY_CPU, env=row.env)
        stack.callback(proc.stop)
        body = setup.request_body(row.model)
        wait_first_200(proc, port, body, row.ready_timeout_s, row.headers)
        pid = proc.popen.pid
    row.ready_s.append(time.monotonic() - started)
    return pid, port


def one_run(bench: Bench, row: Row, pid: int, port: int, concurrency: int) -> Sample:
    """One wrk run, charging CPU to the server tree, nginx, and (the rest) everyone else."""
    nginx_pid = bench.nginx.proc.popen.pid
    server0, upstream0 = _proctree.cpu_seconds(pid), _proctree.cpu_seconds(nginx_pid)
    busy0 = _cpustat.busy_seconds()
    result = _wrk.run(bench.script(row), port, setup.PATH, concurrency, bench.seconds, LOAD_CPU)
    busy = _cpustat.busy_seconds() - busy0
    server = _proctree.cpu_seconds(pid) - server0
    upstream = _proctree.cpu_seconds(nginx_pid) - upstream0
    ours = server + result.client_cpu_s + (0.0 if pid == nginx_pid else upstream)
    return Sample(result, server, upstream, max(busy - ours, 0.0))


def load(bench: Bench, row: Row, pid: int, port: int) -> None:
    """Warm up (discarded), then one run per concurrency, then read the tree's RSS."""
    _wrk.run(bench.script(row), port, setup.PATH, 32, WARMUP_S, LOAD_CPU)
    for concurrency in CONCURRENCIES:
        sample = one_run(bench, row, pid, port, concurrency)
        row.add(concurrency, sample)
        res = sample.wrk
        flag = f" FAILED={res.failed}" if res.failed else ""
        other = 100 * sample.other_cpu_s / res.duration_s
        print(
            f"    c={concurrency}: {res.ok_rps:,.0f} req/s, p50 {res.p50_us:,.0f} µs, "
            f"other CPU {other:.0f}%{flag}",
            flush=True,
        )
    row.rss_mib.append(_proctree.rss_mib(pid))


def measure(bench: Bench, row: Row) -> None:
    """One round of one row; a server is started before and stopped after, even on error."""
    bench.wait_quiet()
    if row.kind == "direct":
        load(bench, row, bench.nginx.proc.popen.pid, bench.nginx.port)
        return
    with ExitStack() as stack:
        pid, port = launch(stack, bench, row)
        print(f"    ready in {row.ready_s[-1]:.2f} s", flush=True)
        load(bench, row, pid, port)
    if row.db is not None:
        row.db_bytes.append(setup.db_size(row.db))


# ------------------------------------------------------------------------------ the rows


def build_rows(bench: Bench, telemetry: setup.Telemetry, skipped: list[str]) -> list[Row]:
    """Direct nginx (twice), the bare forwarder, laneway (telemetry on/off), Portkey, LiteLLM."""
    rows = [
        Row(report.DIRECT, setup.UPSTREAM_MODEL, "direct"),
        Row(report.DIRECT_CROSS, setup.UPSTREAM_MODEL, "nginx"),
        Row(report.BARE, setup.LANE, start=_bare_start(bench.nginx.url)),
    ]
    rows += _laneway_rows(bench, telemetry)
    if not bench.portkey:
        skipped.append("Portkey: not asked for (--no-portkey)")
    elif (portkey := _portkey_row(bench, skipped)) is not None:
        rows.append(portkey)
    if not bench.litellm:
        skipped.append("LiteLLM: not asked for (bench/all.sh without --litellm)")
        return rows
    litellm = _litellm_row(bench, skipped)
    return [*rows, litellm] if litellm else rows


def _bare_start(upstream: str) -> Callable[[int, Path], list[str]]:
    script = str(Path(__file__).resolve().parent / "_bare_proxy.py")
    return lambda port, _workdir: [sys.executable, script, str(port), upstream]


def _laneway_rows(bench: Bench, telemetry: setup.Telemetry) -> list[Row]:
    """One row without the key (it does not exist yet), or one each for every feature on,
    telemetry off, and a plain lane with nothing on (no key, metrics, telemetry, access log)."""
    telemetry_db = bench.scratch / "telemetry.sqlite3"
    variants: list[tuple[str, object | None, Path | None]] = [("laneway serve", None, None)]
    if telemetry.split:
        variants = [
            ("laneway, every feature on", telemetry.on, telemetry_db),
            ("laneway, telemetry off", telemetry.off, None),
        ]
    rows = []
    for index, (name, value, db) in enumerate(variants):
        config = setup.laneway_config(bench.nginx.url, value)
        path = setup.write_yaml(bench.scratch / f"laneway-{index}.yaml", config)
        rows.append(Row(name, setup.LANE, start=_laneway_start(path), db=db))
    if telemetry.split:
        path = setup.write_yaml(bench.scratch / "laneway-plain.yaml", _plain(bench, telemetry))
        quiet = ["--log-level", "warning"]
        rows.append(Row(PLAIN, setup.LANE, start=_laneway_start(path, quiet), headers={}))
    return rows


def _plain(bench: Bench, telemetry: setup.Telemetry) -> dict[str, object]:
    """The issue's "plain lane with nothing on": no key, no metrics, no telemetry."""
    config = setup.laneway_config(bench.nginx.url, telemetry.off)
    config["server"] = {"host": "127.0.0.1", "metrics": False}
    return config


def _laneway_start(config: Path, extra: Sequence[str] = ()) -> Callable[[int, Path], list[str]]:
    return lambda port, workdir: [*setup.laneway_cmd(config, port, workdir), *extra]


def _portkey_row(bench: Bench, skipped: list[str]) -> Row | None:
    """The Portkey gateway row, or ``None`` (with the reason) when it cannot be installed."""
    try:
        portkey_env.ensure()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        skipped.append(f"Portkey: {str(exc).splitlines()[0]}")
        return None
    routing = {**setup.AUTH_HEADERS, **portkey_env.headers(bench.nginx.url)}
    return Row(
        report.PORTKEY,
        setup.UPSTREAM_MODEL,
        start=lambda port, _workdir: portkey_env.command(port),
        headers=routing,
    )


def _litellm_row(bench: Bench, skipped: list[str]) -> Row | None:
    """The LiteLLM proxy row, or ``None`` (with the reason) when its venv cannot be built."""
    try:
        litellm_env.ensure()
    except (RuntimeError, OSError) as exc:
        skipped.append(f"LiteLLM: {str(exc).splitlines()[0]}")
        return None
    path = setup.write_yaml(bench.scratch / "litellm.yaml", setup.litellm_config(bench.nginx.url))

    def start(port: int, workdir: Path) -> list[str]:
        return setup.litellm_cmd(path, port, workdir)

    return Row(
        report.LITELLM, setup.LANE, start=start, env=setup.litellm_env_vars(), ready_timeout_s=90.0
    )


# ------------------------------------------------------------------------------ main


def run(stack: ExitStack, skipped: list[str], args: argparse.Namespace) -> report.Context:
    """Start nginx, build the rows, run the interleaved rounds; return what to render."""
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-gw-")))
    started = time.monotonic()
    nginx = start_nginx(free_port(), cpu=LOAD_CPU)
    stack.callback(nginx.stop)
    nginx_ready = time.monotonic() - started
    bench = Bench(nginx, scratch, *((1, 2) if args.quick else (ROUNDS, SECONDS)))
    bench.litellm = not args.no_litellm
    bench.portkey = not args.no_portkey
    telemetry = setup.detect_telemetry(scratch / "telemetry.sqlite3")
    rows = build_rows(bench, telemetry, skipped)
    for round_no in range(bench.rounds):
        for row in rows[round_no:] + rows[:round_no]:
            print(f"round {round_no + 1}/{bench.rounds}: {row.name}", flush=True)
            measure(bench, row)
    rows[0].ready_s.append(nginx_ready)
    versions = [setup.laneway_version(), setup.nginx_version(), _wrk.version()]
    if any(r.name == report.PORTKEY for r in rows):
        versions.append(portkey_env.ensure())
    if any(r.name == report.LITELLM for r in rows):
        versions.append(setup.litellm_version())
    return report.Context(
        rows=rows,
        telemetry_note=telemetry.note,
        versions=versions,
        skipped=skipped,
        seconds=bench.seconds,
        rounds=bench.rounds,
        body_bytes=len(setup.request_body(setup.LANE)),
        warmup_s=WARMUP_S,
        quiet_waited_s=QUIET_BUDGET_S - bench.quiet_left_s,
    )


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    """Turn SIGINT/SIGTERM/SIGHUP into SystemExit so every started process is stopped.

    SIGINT is handled explicitly because a shell starting this in the background
    leaves it ignored, and then Ctrl-C or ``kill -INT`` would do nothing at all.
    """
    print(f"\nsignal {signum}: stopping every process started", file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def main() -> int:
    """Run the whole comparison (about 5 minutes) and write the docs section."""
    parser = argparse.ArgumentParser(description="laneway serve vs nginx vs LiteLLM")
    parser.add_argument("--quick", action="store_true", help="one round of 2 s cells")
    parser.add_argument("--no-litellm", action="store_true", help="leave LiteLLM's row out")
    parser.add_argument("--no-portkey", action="store_true", help="leave Portkey's row out")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    if setup.cpu_count() < 2:
        print("error: needs 2 CPUs (gateway on CPU 0, nginx + wrk on CPU 1)", file=sys.stderr)
        return 2
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {LOAD_CPU})  # keep this orchestrator off the gateway's core
    setup.compile_laneway()
    began = time.monotonic()
    skipped: list[str] = []
    with ExitStack() as stack:
        stack.callback(os.sched_setaffinity, 0, affinity)  # provenance reports nproc from it
        context = run(stack, skipped, args)
    markdown = report.render(context)
    print(markdown)
    if not args.no_write:
        path = report.write(markdown)
        print(f"\nwrote {path} in {time.monotonic() - began:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
