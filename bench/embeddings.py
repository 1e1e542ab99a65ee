"""Embeddings through ``laneway serve`` vs the upstream directly vs a bare relay.

A batch of 64 texts answered with 64 × 1,536-dim vectors (``_stamp_upstream.py``,
bodies built once: ~2.1 MB as JSON floats, ~0.5 MB as base64), asked as floats and
as base64. laneway's lane pins ``dimensions: 1536``, so every vector's length is
verified; it asks its upstream for the caller's encoding and relays the vectors as they
came (base64 strings counted by length, float arrays cut out of the JSON and counted by
their commas), as the bare relay passes them through. Every feature on: telemetry,
metrics, a key with ``rpm``, access log.
Placement: the server under test alone on CPU 0; upstream and wrk share CPU 1.

    .venv/bin/python bench/embeddings.py [--quick] [--litellm]
"""

from __future__ import annotations

import argparse
import json
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
from _report import provenance

SERVER_CPU, LOAD_CPU = 0, 1
COMMAND = ".venv/bin/python bench/embeddings.py"
LANE, VECTORS, DIMS = "bench-embed", 64, 1536
PATH = "/v1/embeddings"
TARGET_RATIO = 0.75
FORMATS = ("float", "base64")


def body(encoding: str) -> bytes:
    texts = [f"benchmark text number {i}, a sentence of ordinary length." for i in range(VECTORS)]
    return json.dumps({"model": LANE, "input": texts, "encoding_format": encoding}).encode()


def measure(
    scratch: Path, port: int, pid: int | None, seconds: int, concurrency: int
) -> dict[str, dict[str, float]]:
    """Per format: req/s, vectors/s, p50 ms, failures, server CPU ms per request."""
    out: dict[str, dict[str, float]] = {}
    for encoding in FORMATS:
        script = _wrk.write_script(
            scratch / f"embed-{encoding}.lua", body(encoding), setup.AUTH_HEADERS
        )
        _wrk.run(script, port, PATH, concurrency, 1, LOAD_CPU)  # warm-up
        cpu0 = _proctree.cpu_seconds(pid) if pid else 0.0
        r = _wrk.run(script, port, PATH, concurrency, seconds, LOAD_CPU)
        cpu = (_proctree.cpu_seconds(pid) - cpu0) if pid else 0.0
        out[encoding] = {
            "rps": r.ok_rps,
            "p50": r.p50_us / 1e3,
            "failed": float(r.failed),
            "cpu_ms": cpu / max(r.requests, 1) * 1e3,
        }
        print(f"    {encoding}: {out[encoding]}", flush=True)
    return out


def run(args: argparse.Namespace, scratch: Path) -> dict[str, dict[str, dict[str, float]]]:
    seconds, concurrency = (2, 8) if args.quick else (6, 8)
    rows: dict[str, dict[str, dict[str, float]]] = {}
    with ExitStack() as stack:
        upstream = _relay.stamp_upstream(stack, LOAD_CPU)
        print("direct", flush=True)
        rows["direct (no relay)"] = measure(scratch, upstream.port, None, seconds, concurrency)
        bare = _relay.bare(stack, upstream, SERVER_CPU)
        _relay.wait_chat(bare, LANE)
        print("bare", flush=True)
        rows["bare uvicorn+aiohttp relay (floor)"] = measure(
            scratch, bare.port, bare.pid, seconds, concurrency
        )
        bare.proc.stop()
        source = {"provider": "openai", "base_url": f"{upstream.url}/v1", "model": "e"}
        lane = {"kind": "embed", "deadline": "30s", "dimensions": DIMS, "sources": [source]}
        config = setup.feature_config({LANE: lane}, scratch / "telemetry.sqlite3")
        config["lanes"]["bench-chat"] = setup.openai_lane(f"{upstream.url}/v1")
        lw = _relay.laneway(stack, config, scratch, SERVER_CPU)
        _relay.wait_chat(lw, "bench-chat")
        print("laneway", flush=True)
        rows["laneway, every feature on"] = measure(scratch, lw.port, lw.pid, seconds, concurrency)
        lw.proc.stop()
        if args.litellm:
            ll = _relay.litellm(stack, {LANE: f"{upstream.url}/v1"}, scratch, SERVER_CPU)
            _relay.wait_chat(ll, LANE, timeout_s=120)
            print("litellm", flush=True)
            rows["LiteLLM proxy"] = measure(scratch, ll.port, ll.pid, seconds, concurrency)
    return rows


def render(rows: dict[str, dict[str, dict[str, float]]], quick: bool, seconds: str) -> str:
    bare = rows["bare uvicorn+aiohttp relay (floor)"]
    lines = [
        "## Embeddings: 64 × 1,536-dim vectors relayed, floats and base64",
        provenance(COMMAND + (" --quick" if quick else "")).strip(),
        " ".join(__doc__.split("\n\n")[1].replace("``", "`").split())
        + f" wrk `-t1 -c8`, {seconds} per cell after a "
        "1 s warm-up; CPU = the server tree's utime+stime ÷ requests.",
        "",
        "| row | float req/s | float vectors/s | float p50 ms | float CPU ms/req "
        "| base64 req/s | base64 vectors/s | base64 p50 ms | base64 CPU ms/req | failed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, cells in rows.items():
        f, b = cells["float"], cells["base64"]
        cpu_f = f"{f['cpu_ms']:.2f}" if f["cpu_ms"] else "—"
        cpu_b = f"{b['cpu_ms']:.2f}" if b["cpu_ms"] else "—"
        lines.append(
            f"| {name} | {f['rps']:,.0f} | {f['rps'] * VECTORS:,.0f} | {f['p50']:.1f} | {cpu_f} "
            f"| {b['rps']:,.0f} | {b['rps'] * VECTORS:,.0f} | {b['p50']:.1f} | {cpu_b} "
            f"| {f['failed'] + b['failed']:.0f} |"
        )
    lw = rows["laneway, every feature on"]
    lines += ["", "Targets (issue 16), laneway row:", ""]
    for encoding in FORMATS:
        ratio = lw[encoding]["rps"] / bare[encoding]["rps"]
        mark = "met" if ratio >= TARGET_RATIO else "**missed**"
        lines.append(
            f"- {encoding}: relay throughput ≥ {TARGET_RATIO:g}× the bare relay, dimensions "
            f"verified: {ratio:.2f}×: {mark}"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    args = _relay.arguments("embeddings relay benchmark", litellm=True).parse_args()
    _relay.exit_on_signal()
    began = time.monotonic()
    with _relay.kept_off(LOAD_CPU), tempfile.TemporaryDirectory(prefix="bench-embed-") as tmp:
        rows = run(args, Path(tmp))
    markdown = render(rows, args.quick, "2 s" if args.quick else "6 s")
    _relay.publish("embeddings", markdown, args, began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
