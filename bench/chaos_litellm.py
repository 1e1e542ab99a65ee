"""The chaos scenarios through laneway and through LiteLLM's Router, side by side.

One ``laneway sim`` serves everyone at once: ``laneway simulate --sim URL``
(our lanes), and LiteLLM 1.96.2's Router with its default strategy
(``simple-shuffle``) and with ``least-busy``, each in processes of its own
venv. Every run uses specs unique to it, so no two share a rate bucket or a
counter, and every client is measured the same way: from its call records
and the sim's hit log (``laneway.chaos.runner.outcome``). Results go to
``docs/benchmarks.md`` (section ``chaos``).

    .venv/bin/python bench/chaos_litellm.py [--scale F]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp

import litellm_env
from _chaos_report import render
from _procs import LOOPBACK, free_port, spawn, wait_ready
from _report import publish
from laneway.chaos import upstream
from laneway.chaos.metrics import SeenCall
from laneway.chaos.runner import DEFAULT_STATE_URL, ScenarioOutcome, outcome
from laneway.chaos.scenarios import Scenario, build
from laneway.clocks import SystemClock
from laneway.state import RedisStore

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().parent / "_chaos_litellm_driver.py"
STRATEGIES = ("simple-shuffle", "least-busy")
REDIS = {"host": "127.0.0.1", "port": 6379}
CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
PROCESS_BUDGET = 900.0


async def run_process(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """Run one client process to completion; its stdout, or an error with its stderr."""
    process = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=PROCESS_BUDGET)
    if process.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({process.returncode}):\n{err.decode()[-3000:]}")
    return out.decode()


async def ours(sim_url: str, scale: float, workdir: Path) -> list[dict[str, Any]]:
    """``laneway simulate`` on the shared sim; its JSON report."""
    report = workdir / "laneway.json"
    laneway = str(ROOT / ".venv" / "bin" / "laneway")
    cmd = [laneway, "simulate", "--sim", sim_url, "--scale", repr(scale), "--json", str(report)]
    print(await run_process(cmd), flush=True)
    return list(json.loads(report.read_text(encoding="utf-8")))


async def litellm_calls(
    python: str, sim_url: str, strategy: str, scenarios: list[Scenario], workdir: Path
) -> dict[str, list[dict[str, Any]]]:
    """One driver process for the single-process scenarios, N for each replicated one."""
    single = [s for s in scenarios if s.replicas == 1]
    jobs = [_driver(python, sim_url, strategy, single, None, workdir, "single")]
    for s in scenarios:
        if s.replicas > 1:
            tags = [f"{s.key}{i}" for i in range(s.replicas)]
            jobs += [_driver(python, sim_url, strategy, [s], REDIS, workdir, t) for t in tags]
    merged: dict[str, list[dict[str, Any]]] = {}
    for calls in await asyncio.gather(*jobs):
        for key, records in calls.items():
            merged.setdefault(key, []).extend(records)
    return merged


async def _driver(
    python: str,
    sim_url: str,
    strategy: str,
    scenarios: list[Scenario],
    redis: dict[str, Any] | None,
    workdir: Path,
    tag: str,
) -> dict[str, list[dict[str, Any]]]:
    plan = {
        "sim_url": sim_url,
        "strategy": strategy,
        "redis": redis,
        "scenarios": [dataclasses.asdict(s) for s in scenarios],
    }
    path = workdir / f"plan-{strategy}-{tag}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = await run_process([python, str(DRIVER), str(path)], env=litellm_env.offline_env())
    return dict(json.loads(out.strip().splitlines()[-1])["calls"])


async def delete_keys(pattern: str) -> int:
    """Delete the Redis keys a LiteLLM run left (its cooldowns and usage counters)."""
    store = RedisStore.from_url(DEFAULT_STATE_URL, SystemClock())
    try:
        keys = [key async for key in store.client.scan_iter(match=pattern)]
        if keys:
            await store.client.delete(*keys)
        return len(keys)
    finally:
        await store.aclose()


async def run(sim_url: str, python: str, scale: float, workdir: Path) -> str:
    """Run every client at once on one sim; the Markdown section."""
    run_id = secrets.token_hex(3)
    plans = {strategy: build(scale, f"{strategy[:2]}{run_id}") for strategy in STRATEGIES}
    jobs = [litellm_calls(python, sim_url, st, plans[st], workdir) for st in STRATEGIES]
    try:
        ours_report, *theirs = await asyncio.gather(ours(sim_url, scale, workdir), *jobs)
    finally:
        deleted = await delete_keys(f"*chaos-*{run_id}*")
        print(f"deleted {deleted} Redis key(s) left by LiteLLM", flush=True)
    async with aiohttp.ClientSession() as session:
        log = await upstream.hits(session, sim_url)
    litellm: dict[str, list[ScenarioOutcome]] = {}
    for strategy, calls in zip(STRATEGIES, theirs, strict=True):
        litellm[strategy] = [
            outcome(s, _records(calls.get(s.key)), log, []) for s in plans[strategy]
        ]
    return render(ours_report, litellm, scale)


def _records(raw: list[dict[str, Any]] | None) -> list[SeenCall] | None:
    return None if raw is None else [SeenCall.from_json(r) for r in raw]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    python = str(litellm_env.ensure())
    port = free_port()
    sim = spawn("sim", [str(ROOT / ".venv/bin/laneway"), "sim", "--port", str(port)])
    try:
        wait_ready(sim, port, "/b/ok/v1/chat/completions", CHAT)
        with tempfile.TemporaryDirectory(prefix="chaos-") as workdir:
            section = asyncio.run(
                run(f"http://{LOOPBACK}:{port}", python, args.scale, Path(workdir))
            )
    finally:
        sim.stop()
    publish("chaos", section, args.scale)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
