"""A LiteLLM model group as a laneway lane: retries, timeouts, deadline, breaker, sources.

Precedence, as LiteLLM resolves it (BerriAI/litellm ``litellm/router.py``):
- retries: ``Router.__init__`` takes ``router_settings.num_retries``, then
  ``litellm.num_retries`` (``litellm_settings.num_retries``), else
  ``openai.DEFAULT_MAX_RETRIES`` = 2; a deployment's ``litellm_params.num_retries``
  rides in the call's kwargs to ``Router.async_function_with_retries`` and wins
  (measured in the seed's study of litellm 1.96);
- per-attempt timeout: ``Router._get_non_stream_timeout`` takes the deployment's
  ``timeout``, then its ``request_timeout``, then the Router's ``self.timeout``,
  which ``Router.__init__`` sets to ``timeout or litellm.request_timeout``:
  ``router_settings.timeout`` first, ``litellm_settings.request_timeout`` only when
  that is unset, else ``litellm/constants.py`` ``DEFAULT_REQUEST_TIMEOUT_SECONDS`` = 6000;
  each is read with ``or``, so a 0 counts as unset;
- stream timeout: ``Router._get_stream_timeout`` takes the deployment's
  ``stream_timeout``, then ``router_settings.stream_timeout``, else the timeout above;
- ``retry_policy``, ``retry_after``, ``allowed_fails`` and ``cooldown_time`` are
  ``Router.__init__`` arguments (``router_settings``); only ``allowed_fails`` also
  has a module default (``litellm.allowed_fails``), so the others in
  ``litellm_settings`` are read by nothing;
- ``retry_policy`` counts per error class (``get_num_retries_from_retry_policy``
  in ``litellm/litellm_core_utils/get_retry_from_policy.py``, litellm 1.110; 1.96
  never read ``InternalServerErrorRetries``) replace ``num_retries`` for that class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from laneway.core.failures import REJECTION_STATUSES, FailureKind
from laneway.migrate.litellm.shared import Settings, as_int, as_number

DEFAULT_RETRIES = 2
"""``openai.DEFAULT_MAX_RETRIES``: LiteLLM's retries when nothing sets ``num_retries``."""
DEFAULT_TIMEOUT = 6000.0
"""``DEFAULT_REQUEST_TIMEOUT_SECONDS``: the per-attempt timeout when nothing sets one."""
DEFAULT_COOLDOWN = 5.0
"""``DEFAULT_COOLDOWN_TIME_SECONDS`` (``Router.__init__``: ``cooldown_time or`` it)."""
RETRIED_STATUSES = (408, 409, 429, 500, 502, 503, 504)
"""LiteLLM retries these and every other 5xx; laneway lists what it retries."""
RETRY_AFTER_CAP = 60.0
"""LiteLLM waits an upstream's Retry-After instead of its backoff up to this long."""
POLICY_KEYS: dict[str, tuple[str, ...]] = {
    "RateLimitErrorRetries": ("429",),
    "TimeoutErrorRetries": (FailureKind.TIMEOUT.value,),
    "InternalServerErrorRetries": ("500", "502", "503", "504"),
}
"""``retry_policy`` fields with a laneway ``retry_on`` label."""


REJECTION_POLICY_KEYS = (
    "BadRequestErrorRetries",
    "AuthenticationErrorRetries",
    "ContentPolicyViolationErrorRetries",
)


def rejection_gaps(policy: Mapping[str, Any]) -> list[str]:
    """retry_policy counts for rejections: laneway never retries those."""
    return [
        f"retry_policy.{key}: {policy[key]}: laneway never retries a rejection "
        f"({', '.join(map(str, sorted(REJECTION_STATUSES)))}); not carried"
        for key in REJECTION_POLICY_KEYS
        if as_int(policy.get(key))
    ]


def settings(router: Mapping[str, Any], lite: Mapping[str, Any]) -> Settings:
    """The router-wide values, each from where ``Router.__init__`` takes it."""
    if as_int(router.get("num_retries")) is not None:
        retries, retries_origin = router["num_retries"], "router_settings.num_retries"
    elif as_int(lite.get("num_retries")) is not None:
        retries, retries_origin = lite["num_retries"], "litellm_settings.num_retries"
    else:
        retries, retries_origin = None, "openai.DEFAULT_MAX_RETRIES = 2, as nothing sets it"
    if as_number(router.get("timeout")):
        timeout, timeout_origin = as_number(router["timeout"]), "router_settings.timeout"
    elif as_number(lite.get("request_timeout")):
        timeout, timeout_origin = (
            as_number(lite["request_timeout"]),
            "litellm_settings.request_timeout",
        )
    else:
        timeout, timeout_origin = (
            None,
            "LiteLLM's default request_timeout 6000s, as nothing sets one",
        )
    policy = router.get("retry_policy")
    fails = as_int(router.get("allowed_fails"))
    return Settings(
        retries=retries,
        retries_origin=retries_origin,
        timeout=timeout,
        timeout_origin=timeout_origin,
        stream_timeout=as_number(router.get("stream_timeout")) or None,
        retry_policy=policy if isinstance(policy, Mapping) else {},
        allowed_fails=fails if fails is not None else as_int(lite.get("allowed_fails")),
        cooldown=as_number(router.get("cooldown_time")) or None,
        retry_after=as_number(router.get("retry_after")) or 0.0,
    )


def lane(
    kind: str, params: list[Mapping[str, Any]], settings: Settings, notes: list[str]
) -> dict[str, Any]:
    """The lane's policy (sources are added by the caller); ``notes`` get what LiteLLM did."""
    retries, origin = _retries(params, settings)
    timeout, timeout_origin = _timeout(params, settings)
    budget = _retry_budget(retries, settings.retry_policy)
    base = max(settings.retry_after, 0.5)
    deadline = math.ceil(timeout * (budget + 1) + sum(_backoff(n, base) for n in range(budget)))
    out: dict[str, Any] = {"kind": kind, "deadline": f"{deadline}s"}
    if budget:
        out["attempt_timeout"] = f"{timeout:g}s"
        out["retries"] = budget
        out["retry_on"] = _retry_on(retries, settings.retry_policy)
        out["backoff"] = {"kind": "exponential", "base": f"{base * 1000:g}ms", "cap": "8s"}
        out["max_pushback_wait"] = f"{RETRY_AFTER_CAP:g}s"
        notes.append(_retry_note(retries, budget, origin, settings.retry_policy))
    else:
        notes.append(f"retries: none ({origin}: 0): one attempt, in both")
    notes.append(
        f"deadline: {budget + 1} attempt(s) x {timeout:g}s ({timeout_origin}) plus backoff "
        f"is up to {deadline}s, which LiteLLM never enforces; laneway enforces "
        f"deadline: {deadline}s over the whole call (lower it to your callers' deadline)"
    )
    stream = _stream_timeout(params, settings)
    if stream is not None and kind == "chat":
        out["first_byte_timeout"] = f"{stream:g}s"
        notes.append(
            f"stream_timeout {stream:g}s: LiteLLM bounds a streamed attempt by it; laneway's "
            "first_byte_timeout bounds the wait for the first token, the deadline the rest"
        )
    out["breaker"] = _breaker(settings, len(params), notes)
    return out


def _retry_note(retries: int, budget: int, origin: str, policy: Mapping[str, Any]) -> str:
    own = {k: as_int(v) for k, v in policy.items() if k in POLICY_KEYS}
    if not own:
        return (
            f"retries: up to {retries + 1} attempts ({origin}) on 408, 409, 429, every 5xx, "
            "timeouts and connection errors, in both"
        )
    counts = ", ".join(
        f"{key} {count} ({'/'.join(POLICY_KEYS[key])})" for key, count in own.items()
    )
    return (
        f"retries: retry_policy gives {counts}, every other retried failure {retries} "
        f"({origin}); carried as the retry_on map, so a call makes up to {budget + 1} "
        "attempts only on the class with the most"
    )


def _retries(params: list[Mapping[str, Any]], settings: Settings) -> tuple[int, str]:
    own = [p["num_retries"] for p in params if as_int(p.get("num_retries")) is not None]
    if own:
        return max(own), "litellm_params.num_retries"
    if settings.retries is not None:
        return settings.retries, settings.retries_origin
    return DEFAULT_RETRIES, settings.retries_origin


def _timeout(params: list[Mapping[str, Any]], settings: Settings) -> tuple[float, str]:
    own = [as_number(p.get("timeout")) or as_number(p.get("request_timeout")) for p in params]
    found = [t for t in own if t]
    if found:
        return max(found), "litellm_params.timeout"
    if settings.timeout is not None:
        return settings.timeout, settings.timeout_origin
    return DEFAULT_TIMEOUT, settings.timeout_origin


def _stream_timeout(params: list[Mapping[str, Any]], settings: Settings) -> float | None:
    found = [t for t in (as_number(p.get("stream_timeout")) for p in params) if t]
    return max(found) if found else settings.stream_timeout


def _backoff(retry: int, base: float) -> float:
    """LiteLLM's longest sleep before retry ``retry + 1``: exponential, capped, jittered."""
    return min(base * 2.0**retry, 8.0) + 0.75


def _retry_budget(retries: int, policy: Mapping[str, Any]) -> int:
    """The most retries a call may spend: ``retries``, or more where retry_policy gives more."""
    budget = retries
    for key, value in policy.items():
        count = as_int(value)
        if key in POLICY_KEYS and count is not None:
            budget = max(budget, count)
    return min(budget, 20)


def _retry_on(retries: int, policy: Mapping[str, Any]) -> list[Any] | dict[Any, int]:
    """LiteLLM's retried statuses and classes; a map where retry_policy gives its own counts."""
    labels: list[Any] = [*RETRIED_STATUSES, FailureKind.TIMEOUT.value, FailureKind.CONNECT.value]
    own = {
        label: as_int(v) for k, v in policy.items() if k in POLICY_KEYS for label in POLICY_KEYS[k]
    }
    if not own:
        return labels
    counts: dict[Any, int] = {}
    for label in labels:
        count = own.get(str(label), retries)
        if count:
            counts[label] = min(count, 20)
    return counts


def _breaker(settings: Settings, deployments: int, notes: list[str]) -> dict[str, Any]:
    cooldown = settings.cooldown if settings.cooldown is not None else DEFAULT_COOLDOWN
    if settings.allowed_fails is not None:
        failures = min(settings.allowed_fails + 1, 32)
        notes.append(
            f"cooldown: with allowed_fails {settings.allowed_fails} LiteLLM cools a deployment "
            f"out for {cooldown:g}s after {failures} failures in a minute, even the only one of "
            "a group (a total outage of the lane); laneway opens the same breaker but never "
            "takes a lane's last runnable source out of rotation"
        )
    else:
        failures = 5
        single = "never cools a single-deployment group, " if deployments == 1 else ""
        notes.append(
            f"cooldown: LiteLLM {single}cools a deployment at once on a 429 and for "
            f"{cooldown:g}s when over half its calls in a minute fail; laneway's breaker opens "
            "after 5 failures in 60s with no success between, a 429 marks the source by its "
            "Retry-After instead, and the last runnable source is never taken out"
        )
    return {"failures": failures, "window": "60s", "cooldown": f"{cooldown:g}s"}
