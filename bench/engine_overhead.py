"""In-process cost of one ``lw.chat()`` against ``laneway sim``, beside a bare call and LiteLLM.

Three clients call the same simulator (pinned to CPU 0) from a process pinned
to CPU 1, interleaved, three rounds, medians reported:

- ``bare``: one aiohttp POST and JSON parse: the floor for any client here;
- ``laneway``: ``Laneway.chat`` on a lane with a deadline, attempt timeout and retries;
- ``litellm``: ``litellm.Router.acompletion`` (1.96.2, from ``bench/.venv-litellm``).

Run: ``.venv/bin/python bench/engine_overhead.py`` (writes docs/benchmarks.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import litellm_env
from _procs import LOOPBACK, free_port, pinned, spawn, wait_ready
from _report import median, percentile, provenance, write_section

ROOT = Path(__file__).resolve().parents[1]
LOAD = str(Path(__file__).resolve().parent / "_engine_load.py")
CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
ROUNDS = 3
SECONDS = 3.0


def run_client(python: str, mode: str, base_url: str, concurrency: int) -> dict[str, float]:
    env = litellm_env.offline_env() if mode == "litellm" else None
    cmd = pinned([python, LOAD, mode, base_url, str(concurrency), str(SECONDS)], cpu=1)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, timeout=300)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    lat = data["latencies"]
    return {
        "p50": percentile(lat, 50) * 1e6,
        "p99": percentile(lat, 99) * 1e6,
        "rps": len(lat) / data["wall"],
    }


def main() -> int:
    litellm_python = str(litellm_env.ensure())
    clients = {"bare": sys.executable, "laneway": sys.executable, "litellm": litellm_python}
    port = free_port()
    sim = spawn("sim", [str(ROOT / ".venv/bin/laneway"), "sim", "--port", str(port)], cpu=0)
    results: Results = {}
    try:
        wait_ready(sim, port, "/b/ok/v1/chat/completions", CHAT)
        base_url = f"http://{LOOPBACK}:{port}/b/ok/v1"
        for round_no in range(ROUNDS):
            for concurrency in (1, 32):
                for mode, python in clients.items():
                    figures = run_client(python, mode, base_url, concurrency)
                    results.setdefault((mode, concurrency), []).append(figures)
                    print(f"round {round_no + 1} {mode} c={concurrency}: {figures}", flush=True)
    finally:
        sim.stop()
    write_section("engine-overhead", render(results))
    return 0


Results = dict[tuple[str, int], list[dict[str, float]]]


def summary(results: Results, mode: str, concurrency: int, key: str) -> float:
    return median([r[key] for r in results[(mode, concurrency)]])


def render(results: Results) -> str:
    bare_p50 = summary(results, "bare", 1, "p50")
    lines = [
        "## Engine overhead: one `lw.chat()` vs a bare call vs LiteLLM Router",
        "",
        provenance(".venv/bin/python bench/engine_overhead.py"),
        "Upstream: `laneway sim` (`/b/ok/v1`) pinned to CPU 0; each client in its own process "
        f"pinned to CPU 1; {SECONDS:.0f} s per cell, {ROUNDS} interleaved rounds, medians.",
        "",
        "| client | c=1 p50 µs | c=1 p99 µs | added p50 over bare µs | ratio to bare | "
        "c=32 req/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode in ("bare", "laneway", "litellm"):
        p50 = summary(results, mode, 1, "p50")
        lines.append(
            f"| {mode} | {p50:,.0f} | {summary(results, mode, 1, 'p99'):,.0f} | "
            f"{p50 - bare_p50:,.0f} | {p50 / bare_p50:.2f}× | "
            f"{summary(results, mode, 32, 'rps'):,.0f} |"
        )
    lw = summary(results, "laneway", 1, "p50") - bare_p50
    ll = summary(results, "litellm", 1, "p50") - bare_p50
    lines += [
        "",
        f"laneway adds {lw:,.0f} µs per call over the bare client at c=1; LiteLLM's Router adds "
        f"{ll:,.0f} µs ({ll / max(lw, 1):.0f}× laneway's overhead).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
