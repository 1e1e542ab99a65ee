"""Run chaos scenarios through LiteLLM's Router; print every call as JSON.

Runs inside ``bench/.venv-litellm`` (started by ``bench/chaos_litellm.py`` with
``litellm_env.offline_env()``), so it imports only the stdlib and litellm:
laneway is not installed there. The open-loop schedule and the sim clock
marker therefore repeat ``laneway.chaos.load`` and ``laneway.chaos.upstream``
in a few lines each; the metrics are computed by the caller, with laneway's
code, from these records and the sim's hit log.

    python _chaos_litellm_driver.py PLAN_JSON

The plan names the sim, the routing strategy, an optional Redis, and the
scenarios (``dataclasses.asdict`` of ``laneway.chaos.scenarios.Scenario``).
Output: one JSON line ``{"calls": {scenario key: [record, ...]}}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

MESSAGES = [{"role": "user", "content": "chaos scenario: say hello"}]
Call = Callable[[], Awaitable[str | None]]


def clock_offset(sim_url: str) -> float:
    """Sim time minus ``time.monotonic()``, from one marker request the sim logs."""
    spec = f"id=mark-{uuid.uuid4().hex[:12]}"
    sent = time.monotonic()
    with urllib.request.urlopen(f"{sim_url}/b/{spec}/v1/models", timeout=5) as response:
        response.read()
    midpoint = (sent + time.monotonic()) / 2
    with urllib.request.urlopen(f"{sim_url}/_hits?spec={spec}", timeout=5) as response:
        times = json.loads(response.read())["times"]
    return float(times[-1]) - midpoint


def router_for(plan: dict[str, Any], scenario: dict[str, Any]) -> Any:
    """A Router configured as a user who knows the scenario's policy would."""
    import litellm

    policy = scenario["policy"]
    model_list = [
        {
            "model_name": lane_name(scenario),
            "litellm_params": {
                "model": "openai/sim-model",
                "api_base": f"{plan['sim_url']}/b/{source['spec']}/v1",
                "api_key": "sk-sim",
                **({"rpm": source["rpm"]} if source["rpm"] is not None else {}),
            },
            "model_info": {"id": f"{lane_name(scenario)}-{source['name']}"},
        }
        for source in scenario["sources"]
    ]
    redis = plan.get("redis") or {}
    return litellm.Router(
        model_list=model_list,
        routing_strategy=plan["strategy"],
        num_retries=policy["retries"],
        timeout=policy["attempt_timeout"],
        allowed_fails=policy["breaker_failures"],
        cooldown_time=policy["breaker_cooldown"],
        enable_pre_call_checks=any(s["rpm"] is not None for s in scenario["sources"]),
        redis_host=redis.get("host"),
        redis_port=redis.get("port"),
    )


def lane_name(scenario: dict[str, Any]) -> str:
    """The model group: unique to the run, like laneway's lane name."""
    return f"chaos-{scenario['key']}-{scenario['run']}"


async def timed(call: Call, offset: float) -> dict[str, Any]:
    start = time.monotonic()
    error = await call()
    end = time.monotonic()
    return {"start": start + offset, "end": end + offset, "ok": error is None, "error": error}


async def offer(load: dict[str, Any], call: Call, offset: float) -> list[dict[str, Any]]:
    """Open loop at ``per_second`` for ``seconds``, or ``calls`` in sequence ``gap`` apart."""
    if load["one_at_a_time"]:
        records = []
        for index in range(load["calls"]):
            if index:
                await asyncio.sleep(load["gap"])
            records.append(await timed(call, offset))
        return records
    began = time.monotonic()
    tasks = []
    async with asyncio.TaskGroup() as group:
        for index in range(round(load["per_second"] * load["seconds"])):
            await asyncio.sleep(max(began + index / load["per_second"] - time.monotonic(), 0.0))
            tasks.append(group.create_task(timed(call, offset)))
    return [task.result() for task in tasks]


async def run_scenario(plan: dict[str, Any], scenario: dict[str, Any]) -> list[dict[str, Any]]:
    router = router_for(plan, scenario)
    group = lane_name(scenario)

    async def call() -> str | None:
        try:
            await router.acompletion(model=group, messages=MESSAGES)
        except Exception as exc:  # every failure is a result to record, whatever its type
            return type(exc).__name__
        return None

    offset = await asyncio.to_thread(clock_offset, plan["sim_url"])
    return await offer(scenario["load"], call, offset)


async def warm_up(sim_url: str) -> None:
    """One call on a spec of its own: LiteLLM's first call in a process takes seconds
    (lazy imports, client set-up), which would otherwise land on the first scenario calls."""
    import litellm

    spec = f"id=warm-{uuid.uuid4().hex[:12]}"
    params = {"model": "openai/sim-model", "api_base": f"{sim_url}/b/{spec}/v1", "api_key": "k"}
    router = litellm.Router(model_list=[{"model_name": "warm", "litellm_params": params}])
    await router.acompletion(model="warm", messages=MESSAGES)


async def main(plan: dict[str, Any]) -> None:
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    await warm_up(plan["sim_url"])
    scenarios = plan["scenarios"]
    results = await asyncio.gather(*(run_scenario(plan, s) for s in scenarios))
    calls = {s["key"]: records for s, records in zip(scenarios, results, strict=True)}
    print(json.dumps({"calls": calls}))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as plan_file:
        asyncio.run(main(json.load(plan_file)))
