"""The cost ledger: CPU µs per request of each request-path feature, on vs off, in one run.

A baseline ``laneway serve`` (one lane on a fixed nginx upstream, no key, telemetry
off, access log off, no traces, local state, no cache) is measured beside one
variant per feature, each the baseline with one config mutation (``FEATURES``).
Every round runs every row once, in a rotated order, each server started fresh;
the figure of a row is the median over rounds of the gateway process's CPU per
answered request (``/proc``), and its price is that minus the baseline's median,
with the spread of the per-round differences. Adding a feature to the ledger is
one entry in ``FEATURES``. Placement as in ``bench/gateway.py``: the gateway on
CPU 0, nginx and wrk on CPU 1.

    uv run python bench/cost_ledger.py --rounds 9 --seconds 3 --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cpustat
import _gateway_setup as setup
import _proctree
import _wrk
from _procs import free_port, post_once, spawn
from nginx_upstream import start_nginx

GATEWAY_CPU, LOAD_CPU = 0, 1
CONCURRENCY = 8
LANE = f"cost-ledger-{os.getpid()}"
"""A lane name of this run only: Redis state keys it writes are its own."""
SECTION = "## Cost ledger"


@dataclass
class Server:
    """What one row starts: the config, the environment and the serve arguments."""

    config: dict[str, Any]
    env: dict[str, str]
    args: list[str]
    scratch: Path


Mutation = Callable[[Server], None]


def _key_limits(s: Server) -> None:
    key = {"name": "bench", "key": setup.BENCH_KEY, "rpm": setup.KEY_RPM}
    s.config["server"]["keys"] = [key]


def _telemetry(s: Server) -> None:
    s.config["telemetry"] = {"url": f"sqlite:///{s.scratch / 'telemetry.sqlite3'}"}


def _access_log(s: Server) -> None:
    s.args[s.args.index("--log-level") + 1] = "info"


def _traces(s: Server) -> None:
    s.env["OTEL_TRACES_EXPORTER"] = "otlp"
    s.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{free_port()}"


def _redaction(s: Server) -> None:
    s.config["lanes"][LANE]["sources"][0]["api_key"] = "sk-cost-ledger-secret-0123456789"


def _redis_state(s: Server) -> None:
    s.config["state"] = {"url": "redis://127.0.0.1:6379/0"}


def _response_cache(s: Server) -> None:
    s.config["cache"] = {"url": ":memory:"}
    s.config["lanes"][LANE]["cache"] = {"ttl": "1h"}


def _unused_hedge(s: Server) -> None:
    lane = s.config["lanes"][LANE]
    lane["sources"].append({**lane["sources"][0], "priority": 1})
    lane["hedge"] = {"after": "20s"}


def _stored_keys(s: Server) -> None:
    _key_limits(s)
    s.config["server"]["key_store"] = f"sqlite:///{s.scratch / 'keys.sqlite3'}"
    s.config["server"]["admin_keys"] = [{"name": "ops", "key": "sk-cost-ledger-admin-0123"}]


FEATURES: dict[str, tuple[str, Mutation]] = {
    "key limits": ("a server key with an rpm, checked every call", _key_limits),
    "telemetry": ("telemetry to a SQLite file", _telemetry),
    "access log": ("`--log-level info`: one JSON access-log line a call", _access_log),
    "traces": ("OTLP traces to a local port nothing listens on", _traces),
    "redaction": ("a literal source api_key, redacted from logs and errors", _redaction),
    "Redis state": ("`state: {url: redis://127.0.0.1:6379/0}`", _redis_state),
    "response cache": (
        "`cache: {ttl: 1h}` on `:memory:` (all but the first call hit)",
        _response_cache,
    ),
    "hedge (unused)": (
        "`hedge: {after: 20s}`, never reached, and the second source it needs",
        _unused_hedge,
    ),
    "stored-key lookup": ("key limits plus a key store (`server.key_store`)", _stored_keys),
}
"""Each feature: what it turns on, and the mutation of the baseline that does it."""


def baseline(upstream: str, scratch: Path) -> Server:
    """One lane on nginx and nothing else on; metrics are always on in ``laneway serve``."""
    source = {"provider": "openai", "base_url": f"{upstream}/v1", "model": setup.UPSTREAM_MODEL}
    config: dict[str, Any] = {
        "lanes": {LANE: {"kind": "chat", "deadline": "30s", "sources": [source]}},
        "server": {"host": "127.0.0.1"},
        "telemetry": {"url": "none"},
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return Server(config, env, ["--log-level", "warning"], scratch)


@dataclass
class Row:
    """One ledger row and its per-round CPU µs per request (``None``: it did not run)."""

    name: str
    note: str
    mutate: Mutation | None
    us: list[float] = field(default_factory=list)
    failed: str | None = None


def one_round(row: Row, upstream: str, scratch: Path, script: str, seconds: int) -> float:
    """Start the row's server, warm it, load it; the server's CPU µs per answered request."""
    workdir = Path(tempfile.mkdtemp(prefix="ledger-", dir=scratch))
    server = baseline(upstream, workdir)
    if row.mutate is not None:
        row.mutate(server)
    config = setup.write_yaml(workdir / "laneway.yaml", server.config)
    port = free_port()
    cmd = [*setup.laneway_cmd(config, port, workdir), *server.args]
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


def run(rounds: int, seconds: int) -> tuple[list[Row], float]:
    """Every row once per round, order rotated; the other processes' CPU share seen."""
    rows = [Row("baseline", "nothing on", None)]
    rows += [Row(name, note, mutate) for name, (note, mutate) in FEATURES.items()]
    setup.compile_laneway()
    scratch = Path(tempfile.mkdtemp(prefix="cost-ledger-"))
    script = _wrk.write_script(scratch / "post.lua", setup.request_body(LANE), setup.AUTH_HEADERS)
    busy0, wall0 = _cpustat.busy_seconds(), time.monotonic()
    with start_nginx(free_port(), cpu=LOAD_CPU) as nginx:
        for number in range(rounds):
            shift = number % len(rows)
            for row in rows[shift:] + rows[:shift]:
                if row.failed is not None:
                    continue
                try:
                    row.us.append(one_round(row, nginx.url, scratch, script, seconds))
                except RuntimeError as exc:
                    row.failed = str(exc).splitlines()[-1][:200]
            print(f"round {number + 1}/{rounds} done", flush=True)
    load = (_cpustat.busy_seconds() - busy0) / (time.monotonic() - wall0)
    return rows, load


def table(rows: list[Row]) -> list[str]:
    """The ledger: each row's median, its price over the baseline, and the spread."""
    base = rows[0].us
    out = [
        "| feature | what is on | CPU µs/request (median) | price vs baseline (median) | "
        "spread of the per-round price (min..max) |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        if row.failed is not None or not row.us:
            out.append(f"| {row.name} | {row.note} | did not run: {row.failed} | | |")
            continue
        median = statistics.median(row.us)
        if row.mutate is None:
            out.append(f"| {row.name} | {row.note} | {median:.0f} | - | - |")
            continue
        diffs = [a - b for a, b in zip(row.us, base, strict=False)]
        price = statistics.median(diffs)
        share = 100 * price / statistics.median(base)
        spread = f"{min(diffs):+.0f}..{max(diffs):+.0f}"
        out.append(
            f"| {row.name} | {row.note} | {median:.0f} | {price:+.0f} ({share:+.0f}%) | {spread} |"
        )
    return out


NOTES = [
    "Reading it: a row's price is what its feature adds to a request of a lane using it. The",
    "response cache row is the hit path (the same request every time), so it is cheaper than",
    "the baseline; the stored-key row includes key limits (subtract that row); the hedge row",
    "includes the second source a hedge needs. On a busy machine the spread is wide: compare",
    "prices, not single figures, and re-run with more rounds on a quiet one.",
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
        "per-round differences from the baseline of the same round. Metrics are always on in",
        "`laneway serve`, so they are in every row, the baseline included.",
        f"The whole machine averaged {load:.2f} busy cores of 2 during the run.",
        "",
        *table(rows),
        "",
        *NOTES,
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, text: str) -> None:
    """Replace the ledger section of ``path`` (to the next ``## `` heading), or append it."""
    doc = path.read_text(encoding="utf-8")
    start = doc.find(SECTION + "\n")
    if start < 0:
        path.write_text(doc.rstrip("\n") + "\n\n" + text, encoding="utf-8")
        return
    end = doc.find("\n## ", start + len(SECTION))
    tail = "" if end < 0 else doc[end + 1 :]
    path.write_text(doc[:start] + text + ("\n" + tail if tail else ""), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--write", type=Path, help="replace the ledger section of this file")
    ns = parser.parse_args()
    command = "uv run python bench/cost_ledger.py " + " ".join(sys.argv[1:])
    rows, load = run(ns.rounds, ns.seconds)
    text = section(rows, load, ns.rounds, ns.seconds, command.strip())
    print(text)
    if ns.write is not None:
        write_section(ns.write, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
