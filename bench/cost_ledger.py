"""The cost ledger: CPU µs per request of each request-path feature, on vs off, in one run.

A baseline ``laneway serve`` (one lane on a fixed nginx upstream, no key, no metrics,
telemetry off, access log off, no traces, local state, no cache) is measured beside
one variant per feature, each the baseline with config mutations (``FEATURES``);
a feature's price is against the baseline, or against the row it needs
(``against``: an unused hedge against the same two sources without one).
Every round runs every row once, in a rotated order, each server started fresh;
the figure of a row is the median over rounds of the gateway process's CPU per
answered request (``/proc``), and its price is the median of the per-round
differences, with their spread. Adding a feature to the ledger is one entry in
``FEATURES``. Placement as in ``bench/gateway.py``: the gateway on CPU 0, nginx
and wrk on CPU 1. Traces go to a collector in this process that answers 200.

``--instructions`` counts instructions instead (callgrind, ``bench/_callgrind.py``):
each row's ``laneway serve`` app runs in ``bench/_gateway_requests.py`` with its
client in one process, on uvloop with the heap frozen after warm-up as ``laneway
serve`` runs (``--as-served``), at c=1, once with
``--few`` and once with ``--many`` calls; the difference over the difference of the
calls is the row's instructions per request, server and client (the client the
same in every row). Repeatable on a busy host, where the CPU figures are not.

    uv run python bench/cost_ledger.py --rounds 9 --seconds 3 --write docs/benchmarks.md
    uv run python bench/cost_ledger.py --instructions --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _callgrind
import _cpustat
import _gateway_setup as setup
import _proctree
import _wrk
from _ledger_rows import FEATURES, LANE, Mutation, Server, baseline
from _procs import free_port, post_once, spawn
from _trace_collector import collector
from nginx_upstream import start_nginx

GATEWAY_CPU, LOAD_CPU = 0, 1
CONCURRENCY = 8
SECTION = "## Cost ledger"
INSTRUCTIONS_SECTION = "## Cost ledger in instructions"
DRIVER = Path(__file__).resolve().parent / "_gateway_requests.py"


@dataclass
class Row:
    """One ledger row and its per-round CPU µs per request (``None``: it did not run)."""

    name: str
    note: str
    mutate: Mutation | None
    against: str = "baseline"
    us: list[float] = field(default_factory=list)
    failed: str | None = None

    def measure(self, figure: Callable[[], float]) -> None:
        """Keep one more figure, or mark the row failed with why (its first line)."""
        try:
            self.us.append(figure())
        except RuntimeError as exc:
            self.failed = str(exc).splitlines()[0][:300]


@dataclass(frozen=True)
class Place:
    """Where every row's server points: the upstream, the trace collector, a scratch folder,
    and (instructions) the laneway source tree it runs and whether it can turn metrics off."""

    upstream: str
    traces: str
    scratch: Path
    src: Path = setup.REPO_ROOT / "src"
    metrics_switch: bool = True
    untimed: bool = False
    """Counting instructions: batches written at shutdown, not on a timer (see ``untime``)."""

    def server(self, row: Row) -> tuple[Server, Path]:
        """The row's server (the baseline with its mutations) and its config file."""
        workdir = Path(tempfile.mkdtemp(prefix="ledger-", dir=self.scratch))
        server = baseline(self.upstream, workdir, self.traces)
        if not self.metrics_switch:  # a tree from before server.metrics: always on
            del server.config["server"]["metrics"]
        if row.mutate is not None:
            row.mutate(server)
        if self.untimed:
            untime(server)
        return server, setup.write_yaml(workdir / "laneway.yaml", server.config)


def untime(server: Server) -> None:
    """Telemetry and spans written in batches at shutdown, not every second (or five).

    Under callgrind a call takes tens of times longer, so a writer woken by a timer
    writes a batch every few calls, and how many depends on the host's speed: the
    per-batch costs would count per call, more on a slower host. Written at
    shutdown (in the run's difference of calls, as full batches), each row and
    span counts what it costs in a batch.
    """
    telemetry = server.config.get("telemetry")
    if isinstance(telemetry, dict) and telemetry.get("url") != "none":
        telemetry["flush_interval"] = "1h"
    server.env["OTEL_BSP_SCHEDULE_DELAY"] = str(3_600_000)


def has_metrics_switch(src: Path) -> bool:
    """Whether the laneway tree at ``src`` knows ``server.metrics``."""
    code = "from laneway.config.models import ServerConfig as S; print('metrics' in S.model_fields)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip() == "True"


def one_round(row: Row, place: Place, script: str, seconds: int) -> float:
    """Start the row's server, warm it, load it; the server's CPU µs per answered request."""
    server, config = place.server(row)
    port = free_port()
    cmd = [*setup.laneway_cmd(config, port, config.parent), *server.args]
    with ExitStack() as stack:
        proc = spawn(row.name, cmd, cpu=GATEWAY_CPU, env=server.env)
        stack.callback(proc.stop)
        _ready(proc.log_tail, port)
        pid = proc.popen.pid
        _wrk.run(script, port, setup.PATH, CONCURRENCY, 1, LOAD_CPU)
        before = _proctree.cpu_seconds(pid)
        result = _wrk.run(script, port, setup.PATH, CONCURRENCY, seconds, LOAD_CPU)
        used = _proctree.cpu_seconds(pid) - before
    answered = result.requests - result.non2xx
    if answered <= 0 or result.failed:
        raise RuntimeError(f"{result.failed} failed of {result.requests} requests")
    return 1e6 * used / answered


def _ready(log_tail: Callable[[], str], port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    body = setup.request_body(LANE)
    while time.monotonic() < deadline:
        try:
            status, _ = post_once(port, setup.PATH, body, headers=setup.AUTH_HEADERS)
        except OSError:
            status = 0
        if status == 200:
            return
        time.sleep(0.02)
    raise RuntimeError(f"did not answer 200 on :{port}\n{log_tail()}")


def instructions_per_request(row: Row, place: Place, few: int, many: int) -> float:
    """The row's instructions per request (server and client, c=1; see the module doc)."""
    server, config = place.server(row)
    cmd = [sys.executable, str(DRIVER), "--as-served", "--model", LANE, "--key", setup.BENCH_KEY]
    if server.args[server.args.index("--log-level") + 1] == "info":
        cmd += ["--access-log", "json"]
    cmd.append(str(config))
    env = {**server.env, "PYTHONPATH": str(place.src)}
    return _callgrind.per_call(cmd, env, few, many)


def ledger_rows(only: list[str] | None = None) -> list[Row]:
    """The baseline, then a row per feature (``only``: those named and what they are priced
    against)."""
    rows = [Row("baseline", "nothing on", None)]
    for name, (note, mutate, against) in FEATURES.items():
        rows.append(Row(name, note, mutate, against or "baseline"))
    if only is None:
        return rows
    unknown = sorted(set(only) - {row.name for row in rows})
    if unknown:
        raise SystemExit(f"--only: no row {', '.join(unknown)} (rows: {', '.join(FEATURES)})")
    wanted = {"baseline", *only} | {row.against for row in rows if row.name in only}
    return [row for row in rows if row.name in wanted]


def run(rounds: int, seconds: int, only: list[str] | None) -> tuple[list[Row], float]:
    """Every row once per round, order rotated; the other processes' CPU share seen."""
    rows = ledger_rows(only)
    setup.compile_laneway()
    scratch = Path(tempfile.mkdtemp(prefix="cost-ledger-"))
    script = _wrk.write_script(scratch / "post.lua", setup.request_body(LANE), setup.AUTH_HEADERS)
    busy0, wall0 = _cpustat.busy_seconds(), time.monotonic()
    with start_nginx(free_port(), cpu=LOAD_CPU) as nginx, collector() as traces:
        place = Place(nginx.url, traces, scratch)
        for number in range(rounds):
            shift = number % len(rows)
            for row in rows[shift:] + rows[:shift]:
                if row.failed is not None:
                    continue
                row.measure(partial(one_round, row, place, script, seconds))
            print(f"round {number + 1}/{rounds} done", flush=True)
    load = (_cpustat.busy_seconds() - busy0) / (time.monotonic() - wall0)
    return rows, load


def count(few: int, many: int, only: list[str] | None, src: Path) -> list[Row]:
    """Every row's instructions per request, once (they repeat to a few tenths of a percent),
    running the laneway of ``src``."""
    rows = ledger_rows(only)
    scratch = Path(tempfile.mkdtemp(prefix="cost-ledger-"))
    switch = has_metrics_switch(src)
    with start_nginx(free_port(), cpu=LOAD_CPU) as nginx, collector() as traces:
        place = Place(nginx.url, traces, scratch, src, switch, untimed=True)
        for row in rows:
            if row.name == "metrics" and not switch:
                row.failed = "this tree cannot turn metrics off: they are in every row"
                continue
            row.measure(partial(instructions_per_request, row, place, few, many))
            print(f"{row.name}: {row.us[0] if row.us else row.failed}", flush=True)
    return rows


def table(rows: list[Row], unit: str) -> list[str]:
    """The ledger: each row's median, its price over the row it is measured against, and the
    spread of the per-round prices."""
    by_name = {row.name: row for row in rows}
    out = [
        f"| feature | what is on | {unit} (median) | price (median) | against | "
        "spread of the per-round price (min..max) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.failed is not None or not row.us:
            out.append(f"| {row.name} | {row.note} | did not run: {row.failed} | | | |")
            continue
        median = statistics.median(row.us)
        if row.mutate is None:
            out.append(f"| {row.name} | {row.note} | {median:,.0f} | - | - | - |")
            continue
        base = by_name[row.against].us
        if not base:
            out.append(f"| {row.name} | {row.note} | {median:,.0f} | | {row.against} | |")
            continue
        diffs = [a - b for a, b in zip(row.us, base, strict=False)]
        price = statistics.median(diffs)
        share = 100 * price / statistics.median(base)
        spread = f"{min(diffs):+,.0f}..{max(diffs):+,.0f}" if len(diffs) > 1 else "-"
        out.append(
            f"| {row.name} | {row.note} | {median:,.0f} | {price:+,.0f} ({share:+.1f}%) "
            f"| {row.against} | {spread} |"
        )
    return out


NOTES = [
    "Reading it: a row's price is what its feature adds to a request of a lane using it,",
    "against the row named (the baseline, or the row the feature needs: an unused hedge",
    "against the same two sources without it, a key store against the key it looks up).",
    "The response cache row is the hit path (the same request every time), so it is cheaper",
    "than the baseline. On a busy machine the spread is wide: compare prices, not single",
    "figures, and re-run with more rounds on a quiet one.",
]


def section(rows: list[Row], load: float, rounds: int, seconds: int, command: str) -> str:
    """The docs/benchmarks.md section, with the command and the machine's load."""
    lines = [
        SECTION,
        "",
        f"`{command}` ({setup.laneway_version()}, {_wrk.version()}). One lane on a fixed nginx",
        f"upstream, wrk c={CONCURRENCY} for {seconds} s per row and round after a 1 s warm-up,",
        f"{rounds} interleaved rounds (order rotated, each server started fresh); the gateway",
        "process's CPU per answered request, read from /proc. The price is the median of the",
        "per-round differences from the row it is measured against, in the same round.",
        f"The whole machine averaged {load:.2f} busy cores of 2 during the run.",
        "",
        *table(rows, "CPU µs/request"),
        "",
        *NOTES,
        "",
    ]
    return "\n".join(lines)


def instructions_section(rows: list[Row], few: int, many: int, command: str) -> str:
    """The docs/benchmarks.md section of an ``--instructions`` run."""
    lines = [
        INSTRUCTIONS_SECTION,
        "",
        f"`{command}` ({setup.laneway_version()}). Each row's `laneway serve` app and an aiohttp",
        "client in one process (`bench/_gateway_requests.py --as-served`), c=1, under",
        f"`valgrind --tool=callgrind`, once with {few} and once with {many} calls after 50",
        f"warm-up ones: the difference of the totals over {many - few} is the row's instructions",
        "per request, server and client (the client's share is the same in every row). One run:",
        "the counts repeat to a few tenths of a percent, whatever else the host runs.",
        "",
        *table(rows, "instructions/request"),
        "",
        "A row's price is what its feature adds to a request of a lane using it, against the",
        "row named. Instructions are not time (a system call or a cache miss costs more than",
        "its count says; Redis's and nginx's work is in their own processes), but they rank",
        "the features' own work the same on every host.",
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, text: str, heading: str = SECTION) -> None:
    """Replace the section ``heading`` of ``path`` (to the next ``## `` heading), or append it."""
    doc = path.read_text(encoding="utf-8")
    start = doc.find(heading + "\n")
    if start < 0:
        path.write_text(doc.rstrip("\n") + "\n\n" + text, encoding="utf-8")
        return
    end = doc.find("\n## ", start + len(heading))
    tail = "" if end < 0 else doc[end + 1 :]
    path.write_text(doc[:start] + text + ("\n" + tail if tail else ""), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--write", type=Path, help="replace the ledger section of this file")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (callgrind), not CPU"
    )
    parser.add_argument("--few", type=int, default=100, help="calls of the short count")
    parser.add_argument("--many", type=int, default=500, help="calls of the long count")
    parser.add_argument(
        "--only", action="append", help="this row only (repeat it for more; names hold commas)"
    )
    parser.add_argument(
        "--tree",
        type=Path,
        default=setup.REPO_ROOT,
        help="with --instructions: the laneway checkout to run (a git worktree of a commit)",
    )
    ns = parser.parse_args()
    command = ("uv run python bench/cost_ledger.py " + " ".join(sys.argv[1:])).strip()
    if ns.instructions:
        rows = count(ns.few, ns.many, ns.only, ns.tree.resolve() / "src")
        text, heading = instructions_section(rows, ns.few, ns.many, command), INSTRUCTIONS_SECTION
    else:
        rows, load = run(ns.rounds, ns.seconds, ns.only)
        text, heading = section(rows, load, ns.rounds, ns.seconds, command), SECTION
    print(text)
    if ns.write is not None:
        write_section(ns.write, text, heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
