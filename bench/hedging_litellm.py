"""The long-tail load of ``bench/hedging.py`` in real time: LiteLLM's proxy beside laneway.

``bench/hedging.py`` measures hedging in virtual time. LiteLLM cannot run
there, so this runs the same load over sockets: one ``laneway sim`` serves
two upstreams, the first with a long tail (95% of answers in 50 ms, 5% in
5 s, ``hedging.TAIL``), the second answering in 50 ms. Each gateway serves
one model of those two deployments (10 s per attempt, no retry, 30 s for the
call), called with the same non-streamed chat request by ``--calls`` calls at
``--concurrency``, timed at the client:

- LiteLLM 1.96.2's proxy (``bench/.venv-litellm``, one worker, its default
  routing across the two deployments). It has retries, fallbacks and
  timeouts, all of which start after a failure; it has no hedge.
- ``laneway serve``, the same lane with hedging off, ``after: 200ms`` and
  ``after: p95``.

Each row is p50, p99 and p999 latency and the upstream requests per call
(the sim's hits). The host is shared, so a row's p50 carries the gateway's
own time on a busy machine; the tail is the upstream's. With ``--write`` the
section ``hedging-litellm`` of ``docs/benchmarks.md`` is rewritten.

    .venv/bin/python bench/hedging_litellm.py [--calls 2000] [--concurrency 20] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp

import _gateway_setup as setup
import litellm_env
from _procs import LOOPBACK, Proc, free_port, spawn, wait_ready
from _report import write_section
from hedging import TAIL, percentile

ROOT = Path(__file__).resolve().parents[1]
HEALTHY = "sleep=0.05"
ATTEMPT_TIMEOUT = 10.0
DEADLINE = 30.0
SETTINGS: tuple[tuple[str, dict[str, Any] | None], ...] = (
    ("off", None),
    ("after 200ms", {"after": "200ms"}),
    ("after p95", {"after": "p95"}),
)


def litellm_config(sim_url: str, specs: tuple[str, str]) -> dict[str, Any]:
    """One model group of the two deployments; 10 s per request, no retry, as the lane."""
    models = [
        {
            "model_name": "lane",
            "litellm_params": {
                "model": "openai/sim-model",
                "api_base": f"{sim_url}/b/{spec}/v1",
                "api_key": "sk-sim",
                "timeout": ATTEMPT_TIMEOUT,
            },
        }
        for spec in specs
    ]
    return {"model_list": models, "router_settings": {"num_retries": 0}}


def laneway_config(sim_url: str, specs: tuple[str, str], hedge: dict[str, Any] | None) -> Any:
    """The lane of ``bench/hedging.py`` (two sources of equal rank), served by ``laneway serve``."""
    sources = [
        {"provider": "openai", "base_url": f"{sim_url}/b/{spec}/v1", "model": "sim-model"}
        for spec in specs
    ]
    lane: dict[str, Any] = {
        "attempt_timeout": f"{ATTEMPT_TIMEOUT:g}s",
        "deadline": f"{DEADLINE:g}s",
        "sources": sources,
    }
    if hedge is not None:
        lane["hedge"] = hedge
    return {"lanes": {"lane": lane}, "server": {"host": LOOPBACK}, "telemetry": "none"}


async def load(url: str, calls: int, concurrency: int) -> list[float]:
    """``calls`` chat calls at ``concurrency``; each call's latency at the client."""
    body = setup.request_body("lane")
    headers = {"content-type": "application/json"}
    latencies: list[float] = []
    left = calls
    timeout = aiohttp.ClientTimeout(total=DEADLINE + 10)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                started = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as answer:
                    await answer.read()
                    if answer.status != 200:
                        raise RuntimeError(f"{url}: {answer.status}")
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def hits(sim_port: int, specs: tuple[str, str]) -> int:
    """Upstream requests the sim saw for ``specs``."""
    total = 0
    for spec in specs:
        url = f"http://{LOOPBACK}:{sim_port}/_hits?{urllib.parse.urlencode({'spec': spec})}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            total += int(json.loads(answer.read())["count"])
    return total


def row(
    label: str, server: Proc, port: int, sim_port: int, specs: tuple[str, str], args: Any
) -> str:
    """One gateway's run: its percentiles and upstream requests per call."""
    try:
        wait_ready(server, port, "/v1/chat/completions", setup.request_body("lane"), 180.0)
        warm = hits(sim_port, specs)
        url = f"http://{LOOPBACK}:{port}/v1/chat/completions"
        latencies = asyncio.run(load(url, args.calls, args.concurrency))
        sent = hits(sim_port, specs) - warm
    finally:
        server.stop()
    cells = " | ".join(f"{percentile(latencies, q) * 1000:,.0f}" for q in (0.5, 0.99, 0.999))
    return f"| {label} | {cells} | {sent / args.calls:.3f} |"


def run(args: Any, sim_url: str, sim_port: int, workdir: Path) -> list[str]:
    """Every row, each gateway started fresh on its own specs (so the sim's counts are its own)."""
    rows = []
    run_id = secrets.token_hex(3)
    specs = (f"{TAIL},id=ll-tail-{run_id}", f"{HEALTHY},id=ll-ok-{run_id}")
    config = setup.write_yaml(workdir / "litellm.yaml", litellm_config(sim_url, specs))
    port = free_port()
    proxy = spawn("litellm", setup.litellm_cmd(config, port, workdir), env=setup.litellm_env_vars())
    rows.append(
        row(f"LiteLLM {setup.litellm_version()[8:]} proxy", proxy, port, sim_port, specs, args)
    )
    for label, hedge in SETTINGS:
        tag = label.replace(" ", "-")
        specs = (f"{TAIL},id=lw-tail-{tag}-{run_id}", f"{HEALTHY},id=lw-ok-{tag}-{run_id}")
        path = workdir / f"laneway-{tag}.yaml"
        config = setup.write_yaml(path, laneway_config(sim_url, specs, hedge))
        port = free_port()
        server = spawn("laneway", setup.laneway_cmd(config, port, workdir))
        rows.append(row(f"laneway serve, hedge {label}", server, port, sim_port, specs, args))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="rewrite docs/benchmarks.md")
    args = parser.parse_args()
    litellm_env.ensure()
    sim_port = free_port()
    sim = spawn("sim", [str(ROOT / ".venv/bin/laneway"), "sim", "--port", str(sim_port)])
    try:
        wait_ready(sim, sim_port, "/b/ok/v1/chat/completions", setup.request_body("m"))
        with tempfile.TemporaryDirectory(prefix="hedging-") as workdir:
            rows = run(args, f"http://{LOOPBACK}:{sim_port}", sim_port, Path(workdir))
    finally:
        sim.stop()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = "\n".join(
        [
            "## Hedged requests in real time, beside LiteLLM's proxy (issue 26)",
            "",
            f"Command: `.venv/bin/python bench/hedging_litellm.py --calls {args.calls} "
            f"--concurrency {args.concurrency} --write` ({when}, a busy shared host).",
            f"The load of `bench/hedging.py` over sockets: two upstreams on one `laneway sim`, "
            f"the first `{TAIL}` (5% of answers in 5 s), the second `{HEALTHY}`; one model of "
            f"the two, {ATTEMPT_TIMEOUT:g} s per attempt, no retry; {args.calls} non-streamed "
            f"calls at concurrency {args.concurrency}, timed at the client (ms).",
            "",
            "| gateway | p50 | p99 | p999 | upstream requests/call |",
            "|---|---:|---:|---:|---:|",
            *rows,
        ]
    )
    print(section)
    if args.write:
        print(f"wrote {write_section('hedging-litellm', section)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
