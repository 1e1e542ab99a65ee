"""The fault table through laneway's gateway and through LiteLLM's proxy, side by side.

One ``laneway sim`` serves both halves, one after the other, on specs of their own.
laneway: ``laneway simulate --faults --sim URL`` (every row's lane on one
gateway in that process: ``Gateway`` under uvicorn, what ``laneway serve``
runs). LiteLLM: its proxy (1.96.2, ``bench/.venv-litellm``) configured as
closely as it allows (``litellm_config``). Both are called by the same client
code (``laneway.chaos.asking``: streamed, ``include_usage``), counted at the
upstream (the sim's hits) and judged by the same rules
(``laneway.chaos.faults.judge``). At scale 1 the section ``faults`` of
``docs/benchmarks.md`` is rewritten.

    .venv/bin/python bench/faults_litellm.py [--scale F]
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

import _gateway_setup as setup
import litellm_env
from _faults_report import render
from _procs import LOOPBACK, free_port, spawn, wait_ready
from _report import publish
from laneway.chaos.asking import StreamedAnswer, ask
from laneway.chaos.fault_report import RowResult
from laneway.chaos.fault_run import row_runner, run_rows
from laneway.chaos.faults import POLICY
from laneway.sim import FAULTS, FaultScenario, Specs, refusing_port
from laneway.sim.scenarios import FALLBACK, PRIMARY

ROOT = Path(__file__).resolve().parents[1]
WARM = "warm-up"
PROCESS_BUDGET = 900.0
LITELLM_RETRIES = {
    "RateLimitErrorRetries": POLICY.retries,
    "InternalServerErrorRetries": POLICY.retries,
    "TimeoutErrorRetries": POLICY.retries,
    "BadRequestErrorRetries": 0,
    "ContentPolicyViolationErrorRetries": 0,
    "AuthenticationErrorRetries": 0,
}
"""``retry_on`` [429, 5xx, timeout, connect] as LiteLLM's per-exception ``retry_policy``
(a refused or reset connection is an ``InternalServerError`` there)."""


def litellm_config(
    specs: dict[str, Specs], sim_url: str, refused: str, scale: float
) -> dict[str, Any]:
    """Each row as a model group (the primary) with a fallback group, the lane's numbers.

    ``timeout`` is the attempt timeout, ``stream_timeout`` (LiteLLM's bound on
    a streamed request, to its first byte and between bytes) the lane's
    first-byte and idle timeouts, both on every deployment and the router;
    ``num_retries``/``retry_policy`` the retries, ``fallbacks`` (and
    ``context_window_fallbacks``) the priority-1 source,
    ``allowed_fails``/``cooldown_time`` the breaker. LiteLLM has no whole-call
    deadline and no mid-stream continuation.
    """

    p = POLICY
    timeouts = {
        "timeout": p.attempt_timeout * scale,
        "stream_timeout": p.first_byte_timeout * scale,
    }

    def deployment(name: str, spec: str | None) -> dict[str, Any]:
        base = refused if spec is None else f"{sim_url}/b/{spec}/v1"
        params = {"model": "openai/sim-model", "api_base": base, "api_key": "sk-sim", **timeouts}
        return {"model_name": name, "litellm_params": params}

    models = [deployment(WARM, f"id=warm-{secrets.token_hex(4)}")]
    fallbacks = []
    for key, pair in specs.items():
        models += [deployment(key, pair.primary), deployment(f"{key}-fallback", pair.fallback)]
        fallbacks.append({key: [f"{key}-fallback"]})
    router = {
        "num_retries": p.retries,
        "retry_policy": LITELLM_RETRIES,
        **timeouts,
        "fallbacks": fallbacks,
        "context_window_fallbacks": fallbacks,
        "allowed_fails": p.breaker_failures,
        "cooldown_time": p.breaker_cooldown * scale,
    }
    return {"model_list": models, "router_settings": router}


async def laneway_half(sim_url: str, scale: float, workdir: Path) -> list[RowResult]:
    """``laneway simulate --faults`` on the shared sim; its rows read back from JSON."""
    report = workdir / "laneway.json"
    laneway = str(ROOT / ".venv" / "bin" / "laneway")
    cmd = [laneway, "simulate", "--faults", "--sim", sim_url, "--scale", repr(scale)]
    process = await asyncio.create_subprocess_exec(*cmd, "--json", str(report))
    await asyncio.wait_for(process.wait(), timeout=PROCESS_BUDGET)
    if process.returncode != 0:
        raise RuntimeError(f"laneway simulate --faults failed ({process.returncode})")
    rows = json.loads(report.read_text(encoding="utf-8"))["rows"]
    return [RowResult.from_json(row) for row in rows]


async def litellm_half(
    proxy: str, sim_url: str, specs: dict[str, Specs], scale: float
) -> list[RowResult]:
    """Every row through the proxy, on the schedule and by the rules laneway's run uses."""
    url = f"{proxy}/v1/chat/completions"
    async with aiohttp.ClientSession() as session:
        await ask(session, url, WARM, 60.0, 0.0)
        row = row_runner(session, url, sim_url, specs, scale, rename=_whose)
        return await run_rows(FAULTS, row, scale, lambda line: print(f"litellm {line}", flush=True))


def _whose(scenario: FaultScenario, answer: StreamedAnswer) -> StreamedAnswer:
    """LiteLLM names a chunk's ``model`` after the model group that answered, not the upstream."""
    groups = {scenario.key: PRIMARY, f"{scenario.key}-fallback": FALLBACK}
    return dataclasses.replace(answer, models=tuple(groups.get(m, m) for m in answer.models))


def run(sim_url: str, scale: float, workdir: Path) -> tuple[list[RowResult], list[RowResult]]:
    """Start the proxy, run LiteLLM's half, then laneway's; (laneway rows, LiteLLM rows).

    One half after the other, so neither's times carry the other's CPU load.
    """
    run_id = secrets.token_hex(3)
    specs = {s.key: s.specs(scale, f"ll{run_id}") for s in FAULTS}
    with refusing_port(LOOPBACK) as refused_port:
        refused = f"http://{LOOPBACK}:{refused_port}/v1"
        config = setup.write_yaml(
            workdir / "litellm.yaml", litellm_config(specs, sim_url, refused, scale)
        )
        port = free_port()
        proxy = spawn(
            "litellm", setup.litellm_cmd(config, port, workdir), env=setup.litellm_env_vars()
        )
        try:
            body = json.dumps({"model": WARM, "messages": [{"role": "user", "content": "hi"}]})
            wait_ready(proxy, port, "/v1/chat/completions", body.encode(), timeout_s=180.0)

            async def both() -> tuple[list[RowResult], list[RowResult]]:
                theirs = await litellm_half(f"http://{LOOPBACK}:{port}", sim_url, specs, scale)
                return await laneway_half(sim_url, scale, workdir), theirs

            return asyncio.run(both())
        finally:
            proxy.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    litellm_env.ensure()
    port = free_port()
    sim = spawn("sim", [str(ROOT / ".venv/bin/laneway"), "sim", "--port", str(port)])
    try:
        wait_ready(sim, port, "/b/ok/v1/chat/completions", setup.request_body("m"))
        with tempfile.TemporaryDirectory(prefix="faults-") as workdir:
            ours, theirs = run(f"http://{LOOPBACK}:{port}", args.scale, Path(workdir))
    finally:
        sim.stop()
    section = render(ours, theirs, args.scale, setup.litellm_version())
    publish("faults", section, args.scale)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
