"""A scenario as laneway configuration: one lane, every policy field stated explicitly."""

from __future__ import annotations

from typing import Any

from laneway.chaos.scenarios import Scenario
from laneway.config.models import LanewayConfig


def sim_base_url(sim_url: str, spec: str) -> str:
    """The OpenAI base URL of a simulated upstream behaving as ``spec``."""
    return f"{sim_url}/b/{spec}/v1"


def lane_config(scenario: Scenario, sim_url: str, state_url: str | None = None) -> LanewayConfig:
    """The scenario's lane, named ``scenario.lane``, with shared state at ``state_url``."""
    p = scenario.policy
    sources = [
        {
            "name": source.name,
            "base_url": sim_base_url(sim_url, source.spec),
            "model": "sim-model",
            **({"rpm": source.rpm} if source.rpm is not None else {}),
        }
        for source in scenario.sources
    ]
    lane: dict[str, Any] = {
        "deadline": p.deadline,
        "attempt_timeout": p.attempt_timeout,
        "retries": p.retries,
        "retry_on": list(p.retry_on) if p.retries else [],
        "backoff": {
            "kind": "exponential",
            "base": p.backoff_base,
            "cap": p.backoff_cap,
            "jitter": "full",
        },
        "min_attempt": min(0.25, p.attempt_timeout / 4),
        "breaker": {
            "failures": p.breaker_failures,
            "window": p.breaker_window,
            "cooldown": p.breaker_cooldown,
        },
        "sources": sources,
    }
    if p.hedge_after is not None:
        lane["hedge"] = {"after": p.hedge_after}
    document: dict[str, Any] = {
        "lanes": {scenario.lane: lane},
        "telemetry": {"url": "none"},
        "cache": {"url": ":memory:"},
    }
    if state_url is not None:
        document["state"] = {"url": state_url}
    return LanewayConfig.model_validate(document)
