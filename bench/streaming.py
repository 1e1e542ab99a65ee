"""Streamed chat through ``laneway serve`` vs the upstream directly vs a bare relay.

The upstream (``_stamp_upstream.py``) streams a 200-chunk answer, 5 ms apart, and
writes into each chunk's content the monotonic time it wrote it; the client reads the
same host clock when the chunk arrives, so the difference is the chunk's trip through
the relay, per chunk, with no guesswork. Rows: direct (client → upstream), the bare
uvicorn + aiohttp pass-through (the floor: bytes relayed as they come), laneway with
every feature on (telemetry, metrics, a key with ``rpm``, access log), and LiteLLM's
proxy with ``--litellm``. Placement: the server under test alone on CPU 0; upstream
and client share CPU 1.

Figures: time to first token (request sent → first content chunk) and relay delay
per chunk at c=1 and c=32 (paced); relayed chunks per second and CPU µs per chunk
with unpaced streams at c=32 (the relay is the limit); and how soon the upstream
sees its connection closed after the client hangs up mid-stream.

    .venv/bin/python bench/streaming.py [--quick] [--litellm] [--compare OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_setup as setup
import _proctree
import _relay
from _procs import pinned
from _report import median, provenance

SERVER_CPU, LOAD_CPU = 0, 1
CLIENT = str(Path(__file__).resolve().parent / "_stream_client.py")
COMMAND = ".venv/bin/python bench/streaming.py"
PACED, FAST = "bench-stream", "bench-stream-fast"
TARGET_TTFT_MS, TARGET_DELAY_MS, TARGET_RATIO, TARGET_FREE_MS = 1.0, 0.2, 0.75, 50.0


@dataclass
class Row:
    """One relay (or none): how to reach its paced and unpaced streams, and its figures."""

    name: str
    paced_url: str
    fast_url: str
    pid: int | None = None
    figures: dict[str, float] = field(default_factory=dict)


def client(mode: str, url: str, model: str, *args: str) -> dict[str, object]:
    cmd = pinned([sys.executable, CLIENT, mode, url, model, *args], LOAD_CPU)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def measure(row: Row, upstream: _relay.Server, seconds: dict[str, float], trials: int) -> None:
    """Paced c=1 and c=32, unpaced c=32 (with the server's CPU), then disconnects."""
    f = row.figures
    client("paced", row.paced_url, PACED, "32", "1")  # warm-up: pools, first-call costs
    for c in (1, 32):
        busy0 = _proctree.cpu_seconds(row.pid) if row.pid else 0.0
        r = client("paced", row.paced_url, PACED, str(c), str(seconds[f"c{c}"]))
        if row.pid:  # share of a core the relay used: near 100% and its delays are queueing
            spent = _proctree.cpu_seconds(row.pid) - busy0
            f[f"busy_c{c}"] = spent / float(r["wall"]) * 100  # type: ignore[arg-type]
        f[f"ttft_c{c}"] = float(r["ttft_p50"]) * 1e3  # type: ignore[arg-type]
        f[f"delay_c{c}"] = float(r["delay_p50"]) * 1e3  # type: ignore[arg-type]
        f[f"delay99_c{c}"] = float(r["delay_p99"]) * 1e3  # type: ignore[arg-type]
        f[f"failed_c{c}"] = float(r["failed"])  # type: ignore[arg-type]
    cpu0 = _proctree.cpu_seconds(row.pid) if row.pid else 0.0
    r = client("fast", row.fast_url, FAST, "32", str(seconds["fast"]))
    events = float(r["events"])  # type: ignore[arg-type]
    f["chunks_s"] = events / float(r["wall"])  # type: ignore[arg-type]
    if row.pid:
        f["cpu_us_chunk"] = (_proctree.cpu_seconds(row.pid) - cpu0) / max(events, 1) * 1e6
    cut_before = len(_relay.stats(upstream)["cut_streams"])
    closes = list(client("disconnect", row.paced_url, PACED, str(trials))["closes"])  # type: ignore[call-overload]
    time.sleep(0.2)
    cuts = _relay.stats(upstream)["cut_streams"][cut_before:]
    gaps = [(cut - close) * 1e3 for close, cut in zip(closes, cuts, strict=False)]
    f["freed"] = float(len(gaps))
    f["trials"] = float(trials)
    if gaps:
        f["free_p50"], f["free_max"] = median(gaps), max(gaps)


def run(args: argparse.Namespace, scratch: Path) -> list[Row]:
    seconds = (
        {"c1": 3.0, "c32": 2.0, "fast": 2.0} if args.quick else {"c1": 8.0, "c32": 8.0, "fast": 5.0}
    )
    trials = 5 if args.quick else 20
    rows: list[Row] = []
    with ExitStack() as stack:
        upstream = _relay.stamp_upstream(stack, LOAD_CPU)
        rows.append(Row("direct (no relay)", upstream.url, f"{upstream.url}/fast"))
        bare = _relay.bare(stack, upstream, SERVER_CPU)
        _relay.wait_chat(bare, PACED)
        rows.append(
            Row("bare uvicorn+aiohttp relay (floor)", bare.url, f"{bare.url}/fast", bare.pid)
        )
        lanes = {
            PACED: setup.openai_lane(f"{upstream.url}/v1"),
            FAST: setup.openai_lane(f"{upstream.url}/fast/v1"),
        }
        config = setup.feature_config(lanes, scratch / "telemetry.sqlite3")
        lw = _relay.laneway(stack, config, scratch, SERVER_CPU)
        _relay.wait_chat(lw, PACED)
        rows.append(Row("laneway, every feature on", lw.url, lw.url, lw.pid))
        for tree in args.compare:
            old = _relay.laneway(stack, config, scratch, SERVER_CPU, name="old", tree=tree)
            _relay.wait_chat(old, PACED)
            rows.append(
                Row(f"laneway at `{tree.name}`, every feature on", old.url, old.url, old.pid)
            )
        if args.litellm:
            models = {PACED: f"{upstream.url}/v1", FAST: f"{upstream.url}/fast/v1"}
            ll = _relay.litellm(stack, models, scratch, SERVER_CPU)
            _relay.wait_chat(ll, PACED, timeout_s=120)
            rows.append(Row("LiteLLM proxy", ll.url, ll.url, ll.pid))
        for row in rows:
            if row.name.startswith(("direct", "bare")):
                row.paced_url += setup.PATH
                row.fast_url += setup.PATH
            else:
                row.paced_url = row.fast_url = row.paced_url + setup.PATH
            print(f"measuring {row.name}", flush=True)
            measure(row, upstream, seconds, trials)
            print(f"  {row.figures}", flush=True)
    return rows


def render(rows: list[Row], quick: bool, compared: list[Path]) -> str:
    direct, bare = rows[0].figures, rows[1].figures
    lines = [
        "## Streaming: a 200-chunk answer, 5 ms apart, relayed",
        provenance(
            COMMAND
            + (" --quick" if quick else "")
            + "".join(f" --compare {tree}" for tree in compared)
        ).strip(),
        "Upstream `bench/_stamp_upstream.py` (raw asyncio) writes each chunk's send time "
        "(`time.monotonic()`, one clock for the whole host) into its content; the client "
        "(aiohttp, `bench/_stream_client.py`) subtracts it from its own reading when the "
        "chunk arrives. The server under test runs alone on CPU 0; upstream and client share "
        "CPU 1. laneway: telemetry to SQLite, metrics, a key with `rpm`, JSON access log. "
        "*Added* = the row's p50 minus the direct p50 (what the relay adds: one more "
        "loopback hop and its own work). Unpaced: the upstream writes chunks back to back, "
        "so the relay's CPU is the limit.",
        "",
        "| row | TTFT p50 c=1 ms | added c=1 | TTFT p50 c=32 ms | added c=32 | chunk delay "
        "p50 c=1 ms | added c=1 | chunk delay p50 c=32 ms | added c=32 | delay p99 c=32 ms "
        "| relay's core busy, paced c=32 | unpaced chunks/s c=32 | CPU µs/chunk "
        "| upstream freed after hang-up p50 / max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        f = row.figures
        freed = (
            f"{f['free_p50']:.1f} / {f['free_max']:.1f} ({f['freed']:.0f} of {f['trials']:.0f})"
            if "free_p50" in f
            else f"not freed ({f['trials']:.0f} trials)"
        )
        cells = [row.name]
        for key, digits in (("ttft_c1", 2), ("ttft_c32", 2), ("delay_c1", 3), ("delay_c32", 3)):
            cells += [f"{f[key]:.{digits}f}", f"{f[key] - direct[key]:+.{digits}f}"]
        cpu = f"{f['cpu_us_chunk']:.1f}" if "cpu_us_chunk" in f else "—"
        busy = f"{f['busy_c32']:.0f}%" if "busy_c32" in f else "—"
        cells += [f"{f['delay99_c32']:.2f}", busy, f"{f['chunks_s']:,.0f}", cpu, freed]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Targets (issue 16), laneway row:", ""]
    lw = next(r.figures for r in rows if r.name.startswith("laneway, "))
    lines += _targets(lw, direct, bare)
    failed = {r.name: r.figures.get("failed_c1", 0) + r.figures.get("failed_c32", 0) for r in rows}
    if any(failed.values()):
        lines.append(f"\n⚠ failed streams: {failed}")
    return "\n".join(lines) + "\n"


def _targets(lw: dict[str, float], direct: dict[str, float], bare: dict[str, float]) -> list[str]:
    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    out = []
    checks = (
        ("ttft", TARGET_TTFT_MS, "added TTFT p50 at c={c} ≤ {t:g} ms"),
        ("delay", TARGET_DELAY_MS, "each chunk within {t:g} ms p50 of its arrival, c={c}"),
    )
    for key, target, label in checks:
        for c in (1, 32):
            name = f"{key}_c{c}"
            added, floor = lw[name] - direct[name], bare[name] - direct[name]
            out.append(
                f"- {label.format(c=c, t=target)}: {added:+.3f} ms over direct "
                f"(bare relay {floor:+.3f}): {verdict(added <= target)}"
            )
    ratio = lw["chunks_s"] / bare["chunks_s"]
    out.append(
        f"- relayed chunks/s ≥ {TARGET_RATIO:g}× the bare relay: {ratio:.2f}× "
        f"({lw['chunks_s']:,.0f} vs {bare['chunks_s']:,.0f}): {verdict(ratio >= TARGET_RATIO)}"
    )
    worst = lw.get("free_max", float("inf"))
    freed = f"{worst:.1f} ms worst of {lw['freed']:.0f}/{lw['trials']:.0f}"
    ok = worst <= TARGET_FREE_MS and lw["freed"] == lw["trials"]
    out.append(
        f"- hang-up frees the upstream connection ≤ {TARGET_FREE_MS:g} ms: {freed}: {verdict(ok)}"
    )
    return out


def main() -> int:
    parser = _relay.arguments("streaming relay benchmark", litellm=True)
    parser.add_argument(
        "--compare",
        type=Path,
        action="append",
        default=[],
        help="another checkout's laneway, measured in the same run (a row each)",
    )
    args = parser.parse_args()
    _relay.exit_on_signal()
    began = time.monotonic()
    with _relay.kept_off(LOAD_CPU), tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        rows = run(args, Path(tmp))
    markdown = render(rows, args.quick, args.compare)
    _relay.publish("streaming", markdown, args, began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
