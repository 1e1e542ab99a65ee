"""Translating a LiteLLM proxy config into an equivalent ``laneway.yaml``.

``translate`` is pure: a parsed LiteLLM config in, a ``Translation`` out:
the laneway config as plain data, a note per lane saying what LiteLLM would
have done and what laneway does instead (each silent default it replaced
named), and every key with no laneway equivalent (listed, never dropped).

LiteLLM semantics relied on (litellm 1.96, measured in the seed's study):
retries resolve per deployment, then ``router_settings``, then
``litellm_settings``, else ``openai.DEFAULT_MAX_RETRIES`` = 2; 408, 409, 429
and every 5xx are retried, and timeouts and connection errors; the per-attempt
timeout resolves deployment ``timeout``, ``litellm_settings.request_timeout``,
``router_settings.timeout``, else ``litellm.request_timeout`` = 6000 s; there
is no overall deadline; the backoff is ``0.5 s * 2^n`` capped at 8 s plus up
to 0.75 s of jitter, or the upstream's Retry-After when it is at most 60 s;
``retry_policy``'s ``InternalServerErrorRetries`` is never read;
``allowed_fails`` switches to a cooldown that takes a single deployment out
of rotation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from laneway.core.failures import REJECTION_STATUSES, REQUEST_REJECTION_STATUSES, FailureKind

DEFAULT_RETRIES = 2
"""``openai.DEFAULT_MAX_RETRIES``: LiteLLM's retries when nothing sets ``num_retries``."""
DEFAULT_TIMEOUT = 6000.0
"""LiteLLM's per-attempt timeout when nothing sets one (``litellm.request_timeout``)."""
DEFAULT_COOLDOWN = 5.0
RETRIED_STATUSES = (408, 409, 429, 500, 502, 503, 504)
"""LiteLLM retries these and every other 5xx; laneway lists what it retries."""
RETRY_AFTER_CAP = 60.0
"""LiteLLM waits an upstream's Retry-After instead of its backoff up to this long."""

PROVIDERS: dict[str, tuple[str, str | None]] = {
    "openai": ("openai", "https://api.openai.com/v1"),
    "openrouter": ("openai", "https://openrouter.ai/api/v1"),
    "hosted_vllm": ("openai", None),
    "azure": ("azure", None),
    "anthropic": ("anthropic", "https://api.anthropic.com/v1"),
    "gemini": ("gemini", "https://generativelanguage.googleapis.com/v1beta"),
    "mistral": ("openai", "https://api.mistral.ai/v1"),
    "deepseek": ("openai", "https://api.deepseek.com/v1"),
    "groq": ("openai", "https://api.groq.com/openai/v1"),
    "together_ai": ("openai", "https://api.together.xyz/v1"),
    "fireworks_ai": ("openai", "https://api.fireworks.ai/inference/v1"),
}
"""LiteLLM provider prefixes laneway speaks: its wire format and the default base URL."""
UNSET_CACHE_TTL = 3600.0
"""The ttl written for a LiteLLM cache that sets none (laneway's cache requires one)."""
ANTHROPIC_MAX_TOKENS = 4096
"""LiteLLM's default ``max_tokens`` for Anthropic calls that give none."""

POLICY_KEYS: dict[str, str] = {
    "RateLimitErrorRetries": "429",
    "TimeoutErrorRetries": FailureKind.TIMEOUT.value,
}
"""``retry_policy`` fields with a laneway ``retry_on`` label."""
REJECTION_POLICY_KEYS = (
    "BadRequestErrorRetries",
    "AuthenticationErrorRetries",
    "ContentPolicyViolationErrorRetries",
)


@dataclass(slots=True)
class Translation:
    """A translated config: ``config`` as plain data, notes per lane, and the gaps."""

    config: dict[str, Any]
    notes: dict[str, list[str]] = field(default_factory=dict)
    gaps: list[str] = field(default_factory=list)
    """Keys with no laneway equivalent, each with what it did: the translation is
    complete only when this is empty."""
    header: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every key found its laneway equivalent."""
        return not self.gaps


@dataclass(frozen=True, slots=True)
class Settings:
    """The router-wide values a lane falls back on, resolved as LiteLLM resolves them."""

    retries: int | None
    timeout: float | None
    stream_timeout: float | None
    retry_policy: Mapping[str, Any]
    allowed_fails: int | None
    cooldown: float | None


def translate(data: Mapping[str, Any]) -> Translation:
    """The laneway equivalent of LiteLLM proxy config ``data``."""
    out = Translation({})
    router = _mapping(data, "router_settings", out)
    lite = _mapping(data, "litellm_settings", out)
    settings = _settings(router, lite)
    _rejection_retries(settings.retry_policy, out)
    groups = _groups(data.get("model_list"), out)
    deployments: dict[str, Any] = {}
    lanes: dict[str, Any] = {}
    for group, entries in groups.items():
        names = _deployment_names(group, entries)
        for name, entry in zip(names, entries, strict=True):
            deployment = _deployment(name, entry, out)
            if deployment is not None:
                deployments[name] = deployment
        kept = [(n, e) for n, e in zip(names, entries, strict=True) if n in deployments]
        if kept:
            lanes[group] = _lane(group, kept, settings, out)
        else:
            out.gaps.append(f"model_list: {group}: no deployment laneway can call; lane left out")
    _fallbacks(router, lite, lanes, out)
    out.config = {"deployments": deployments, "lanes": lanes}
    _aliases(router, lanes, out)
    _router_rest(router, out)
    _litellm_rest(lite, lanes, out)
    _general(_mapping(data, "general_settings", out), out)
    _top_rest(data, out)
    _cache(lite, lanes, out)
    return out


def _mapping(data: Mapping[str, Any], key: str, out: Translation) -> Mapping[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        out.gaps.append(f"{key}: not a mapping; not read")
        return {}
    return value


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _settings(router: Mapping[str, Any], lite: Mapping[str, Any]) -> Settings:
    retries = router.get("num_retries", lite.get("num_retries"))
    timeout = _number(lite.get("request_timeout")) or _number(router.get("timeout"))
    policy = router.get("retry_policy") or lite.get("retry_policy") or {}
    return Settings(
        retries=int(retries) if isinstance(retries, int) else None,
        timeout=timeout,
        stream_timeout=_number(router.get("stream_timeout")),
        retry_policy=policy if isinstance(policy, Mapping) else {},
        allowed_fails=_int(router.get("allowed_fails", lite.get("allowed_fails"))),
        cooldown=_number(router.get("cooldown_time", lite.get("cooldown_time"))),
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _groups(model_list: object, out: Translation) -> dict[str, list[Mapping[str, Any]]]:
    """model_list entries by ``model_name``: a LiteLLM model group is a laneway lane."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    if not isinstance(model_list, list):
        out.gaps.append("model_list: missing or not a list; no lane to write")
        return groups
    for index, entry in enumerate(model_list):
        name = entry.get("model_name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not isinstance(entry.get("litellm_params"), Mapping):
            out.gaps.append(f"model_list[{index}]: needs model_name and litellm_params; skipped")
            continue
        groups.setdefault(name, []).append(entry)
    return groups


def _deployment_names(group: str, entries: list[Mapping[str, Any]]) -> list[str]:
    if len(entries) == 1:
        return [group]
    return [f"{group}-{index + 1}" for index in range(len(entries))]


DEPLOYMENT_PARAMS = frozenset(
    {"model", "api_base", "api_key", "api_version", "rpm", "tpm", "max_retries"}
    | {"input_cost_per_token", "output_cost_per_token"}
)
LANE_PARAMS = frozenset({"timeout", "request_timeout", "stream_timeout", "num_retries"})
SOURCE_PARAMS = frozenset({"order", "weight"})
MODEL_INFO = frozenset(
    {"mode", "max_input_tokens", "input_cost_per_token", "output_cost_per_token"}
)
MODEL_INFO_INERT = frozenset({"id", "base_model", "description", "max_tokens", "max_output_tokens"})
"""model_info keys LiteLLM reads for display or its cost map only: nothing to carry."""


def _deployment(name: str, entry: Mapping[str, Any], out: Translation) -> dict[str, Any] | None:
    params: Mapping[str, Any] = entry["litellm_params"]
    found = entry.get("model_info")
    info: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    where = f"model_list[{name}]"
    model = str(params.get("model", ""))
    prefix, _, rest = model.partition("/")
    if prefix not in PROVIDERS or not rest:
        out.gaps.append(
            f"{where}.litellm_params.model: {model!r}: laneway speaks the openai, azure, "
            "anthropic and gemini wire formats (providers openai, openrouter, hosted_vllm, "
            f"azure, anthropic, gemini, mistral, deepseek, groq, together_ai, fireworks_ai); "
            "this deployment is left out"
        )
        return None
    provider, base_url = PROVIDERS[prefix]
    base_url = params.get("api_base") or base_url
    if base_url is None:
        out.gaps.append(f"{where}.litellm_params.api_base: {prefix} needs one; left out")
        return None
    deployment: dict[str, Any] = {"provider": provider, "base_url": base_url, "model": rest}
    for key in ("api_key", "rpm", "tpm"):
        if params.get(key) is not None:
            deployment[key] = params[key]
    if params.get("api_version") is not None:
        version = params["api_version"]
        deployment["api_version"] = (
            version.isoformat() if hasattr(version, "isoformat") else str(version)
        )
    if params.get("max_retries") is not None:
        out.header.append(
            f"{where}.litellm_params.max_retries: the provider client's own retries, which "
            "LiteLLM's Router sets to 0 (it is the only retry loop): inert, as in laneway"
        )
    if provider == "anthropic":
        deployment["max_tokens"] = ANTHROPIC_MAX_TOKENS
    _deployment_info(deployment, params, info, where, out)
    for key in sorted(set(params) - DEPLOYMENT_PARAMS - LANE_PARAMS - SOURCE_PARAMS):
        out.gaps.append(f"{where}.litellm_params.{key}: no laneway equivalent; not carried")
    return deployment


def _deployment_info(
    deployment: dict[str, Any],
    params: Mapping[str, Any],
    info: Mapping[str, Any],
    where: str,
    out: Translation,
) -> None:
    """Context window and price from model_info (litellm_params' costs win, as in LiteLLM)."""
    if isinstance(info.get("max_input_tokens"), int):
        deployment["context_window"] = info["max_input_tokens"]
    costs = {**info, **params}
    price_in = _number(costs.get("input_cost_per_token"))
    price_out = _number(costs.get("output_cost_per_token"))
    if price_in is not None:
        price = {"input": round(price_in * 1e6, 6)}
        if price_out is not None:
            price["output"] = round(price_out * 1e6, 6)
        deployment["price"] = price
    if params.get("api_key") is not None and not str(params["api_key"]).startswith("os.environ/"):
        out.header.append(f"{where}: api_key is a literal in the file; prefer os.environ/NAME")
    for key in sorted(set(info) & MODEL_INFO_INERT):
        out.header.append(f"{where}.model_info.{key}: informational in LiteLLM; not needed")
    for key in sorted(set(info) - MODEL_INFO - MODEL_INFO_INERT):
        out.gaps.append(f"{where}.model_info.{key}: no laneway equivalent; not carried")


def _lane(
    group: str,
    kept: list[tuple[str, Mapping[str, Any]]],
    settings: Settings,
    out: Translation,
) -> dict[str, Any]:
    params = [entry["litellm_params"] for _, entry in kept]
    infos = [entry.get("model_info") or {} for _, entry in kept]
    kind = "embed" if any(i.get("mode") == "embedding" for i in infos) else "chat"
    notes = out.notes.setdefault(group, [])
    retries, origin = _retries(params, settings)
    timeout, timeout_origin = _timeout(params, settings)
    lane: dict[str, Any] = {"kind": kind}
    budget = _retry_budget(group, retries, settings.retry_policy, notes, out)
    deadline = math.ceil(timeout * (budget + 1) + sum(_backoff(n) for n in range(budget)))
    lane["deadline"] = f"{deadline}s"
    if budget:
        lane["attempt_timeout"] = f"{timeout:g}s"
        lane["retries"] = budget
        lane["retry_on"] = _retry_on(retries, settings.retry_policy)
        lane["backoff"] = {"kind": "exponential", "base": "500ms", "cap": "8s"}
        lane["max_pushback_wait"] = f"{RETRY_AFTER_CAP:g}s"
    if budget:
        notes.append(
            f"retries: LiteLLM makes up to {retries + 1} attempts ({origin}) on 408, 409, 429, "
            "every 5xx, timeouts and connection errors; laneway declares them: retries, retry_on"
        )
    else:
        notes.append(f"retries: none in LiteLLM ({origin}: 0) and none in laneway: one attempt")
    notes.append(
        f"deadline: LiteLLM has no overall deadline: {budget + 1} x {timeout:g}s per attempt "
        f"({timeout_origin}) plus backoff is up to {deadline}s, computed, never enforced, and "
        f"longer when an upstream's Retry-After (up to 60s) replaces a backoff; laneway "
        f"enforces deadline: {deadline}s over the whole call (lower it to your callers' deadline)"
    )
    if budget:
        notes.append(
            "backoff: LiteLLM sleeps 0.5s x 2^n capped at 8s plus up to 0.75s of random jitter, "
            "or the upstream's Retry-After up to 60s; laneway sleeps the same exponential without "
            "the jitter, and a Retry-After up to max_pushback_wait 60s"
        )
    stream = _stream_timeout(params, settings)
    if stream is not None and kind == "chat":
        lane["first_byte_timeout"] = f"{stream:g}s"
        notes.append(
            f"stream_timeout: LiteLLM bounds a streamed attempt by {stream:g}s; laneway's "
            "first_byte_timeout bounds the wait for its first token, the deadline the rest"
        )
    lane["breaker"] = _breaker(settings, len(kept), notes)
    notes.append(
        "usage and cost: LiteLLM fills usage an upstream omits with zeros and prices a model "
        "missing from its cost map at $0; laneway reports both as unknown (n/a), never 0"
    )
    lane["sources"] = [_source(name, entry) for name, entry in kept]
    return lane


def _retries(params: list[Mapping[str, Any]], settings: Settings) -> tuple[int, str]:
    own = [p["num_retries"] for p in params if _int(p.get("num_retries")) is not None]
    if own:
        return max(own), "litellm_params.num_retries"
    if settings.retries is not None:
        return settings.retries, "num_retries in router_settings or litellm_settings"
    return DEFAULT_RETRIES, (
        "the implicit default: nothing sets num_retries, so LiteLLM uses "
        "openai.DEFAULT_MAX_RETRIES = 2"
    )


def _timeout(params: list[Mapping[str, Any]], settings: Settings) -> tuple[float, str]:
    own = [_number(p.get("timeout")) or _number(p.get("request_timeout")) for p in params]
    found = [t for t in own if t is not None]
    if found:
        return max(found), "litellm_params.timeout"
    if settings.timeout is not None:
        return settings.timeout, "request_timeout or router_settings.timeout"
    return DEFAULT_TIMEOUT, "LiteLLM's default request_timeout, as nothing sets one"


def _stream_timeout(params: list[Mapping[str, Any]], settings: Settings) -> float | None:
    found = [t for t in (_number(p.get("stream_timeout")) for p in params) if t is not None]
    return max(found) if found else settings.stream_timeout


def _backoff(retry: int) -> float:
    """LiteLLM's longest sleep before retry ``retry + 1``: exponential, capped, jittered."""
    return min(0.5 * 2.0**retry, 8.0) + 0.75


def _retry_budget(
    group: str, retries: int, policy: Mapping[str, Any], notes: list[str], out: Translation
) -> int:
    """The most retries a call may spend: ``retries``, or more where retry_policy gives more."""
    budget = retries
    for key, value in policy.items():
        count = _int(value)
        if key in POLICY_KEYS and count is not None:
            budget = max(budget, count)
        elif key == "InternalServerErrorRetries":
            notes.append(
                f"retry_policy.InternalServerErrorRetries: {value} is inert in LiteLLM (its "
                f"resolver never reads it; 5xx get num_retries = {retries}); laneway keeps what "
                "LiteLLM did: 5xx are retried per retries"
            )
    return min(budget, 20)


def _rejection_retries(policy: Mapping[str, Any], out: Translation) -> None:
    for key in REJECTION_POLICY_KEYS:
        if _int(policy.get(key)):
            out.gaps.append(
                f"retry_policy.{key}: {policy[key]}: laneway never retries a rejection "
                f"({', '.join(map(str, sorted(REJECTION_STATUSES)))}); not carried"
            )


def _retry_on(retries: int, policy: Mapping[str, Any]) -> list[Any] | dict[Any, int]:
    """LiteLLM's retried statuses and classes; a map where retry_policy gives its own counts."""
    labels: list[Any] = [*RETRIED_STATUSES, FailureKind.TIMEOUT.value, FailureKind.CONNECT.value]
    own = {POLICY_KEYS[k]: _int(v) for k, v in policy.items() if k in POLICY_KEYS}
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
        single = "a single-deployment group is never cooled, " if deployments == 1 else ""
        notes.append(
            f"cooldown: LiteLLM ({single}429s cool a deployment at once, over half failing in "
            f"a minute cools it for {cooldown:g}s); laneway's breaker opens after 5 failures "
            "in 60s with no success between, a 429 marks the source by its Retry-After "
            "instead, and the last runnable source is never taken out"
        )
    return {"failures": failures, "window": "60s", "cooldown": f"{cooldown:g}s"}


def _source(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    params = entry["litellm_params"]
    source: dict[str, Any] = {"deployment": name}
    if _int(params.get("order")) is not None:
        source["priority"] = params["order"]
    weight = _number(params.get("weight"))
    if weight is not None and weight > 0:
        source["weight"] = weight
    return source


ROUTER_READ = frozenset(
    {"num_retries", "timeout", "stream_timeout", "retry_policy", "allowed_fails"}
    | {"cooldown_time", "fallbacks", "context_window_fallbacks", "default_fallbacks"}
    | {"model_group_alias", "redis_host", "redis_port", "redis_password", "redis_url"}
    | {"routing_strategy", "enable_pre_call_checks", "content_policy_fallbacks"}
)
LITELLM_READ = frozenset(
    {"num_retries", "request_timeout", "retry_policy", "allowed_fails", "cooldown_time"}
    | {"fallbacks", "context_window_fallbacks", "default_fallbacks", "cache", "cache_params"}
)
LOGGING_ONLY = frozenset({"set_verbose", "json_logs"})
TOP_READ = frozenset({"model_list", "router_settings", "litellm_settings", "general_settings"})


def _fallbacks(
    router: Mapping[str, Any], lite: Mapping[str, Any], lanes: dict[str, Any], out: Translation
) -> None:
    """``fallbacks`` and ``context_window_fallbacks`` become ``fallback_lanes``."""
    for key in ("fallbacks", "context_window_fallbacks"):
        for entry in _listed(router.get(key, lite.get(key))):
            for group, targets in entry.items():
                for target in targets if isinstance(targets, list) else [targets]:
                    _fall_back(key, str(group), str(target), lanes, out)
    defaults = router.get("default_fallbacks", lite.get("default_fallbacks"))
    for target in defaults if isinstance(defaults, list) else []:
        for group in lanes:
            if group != target and lanes[group]["kind"] == lanes.get(target, {}).get("kind"):
                _fall_back("default_fallbacks", group, str(target), lanes, out)
    if router.get("content_policy_fallbacks") or lite.get("content_policy_fallbacks"):
        out.gaps.append(
            "content_policy_fallbacks: laneway does not move a content-filter refusal (a 400) "
            "to another lane: it is the request's, returned to the caller; not carried"
        )


def _listed(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _fall_back(key: str, group: str, target: str, lanes: dict[str, Any], out: Translation) -> None:
    lane, rescue = lanes.get(group), lanes.get(target)
    if lane is None or rescue is None or lane["kind"] != rescue["kind"] or group == target:
        out.gaps.append(f"{key}: {group} -> {target}: no such pair of lanes of one kind; skipped")
        return
    chain = lane.setdefault("fallback_lanes", [])
    if target not in chain:
        chain.append(target)
    what = "context-window errors only" if key == "context_window_fallbacks" else "any error"
    out.notes[group].append(
        f"{key}: LiteLLM moves to {target} on {what} after this group's retries, with a new "
        f"timeout per attempt and no overall bound; laneway falls back to lane {target} under "
        "its own policy and the caller's one deadline, on any failure but the caller's own "
        f"rejections ({', '.join(map(str, sorted(REQUEST_REJECTION_STATUSES)))}), "
        "context-length ones included"
    )


def _aliases(router: Mapping[str, Any], lanes: Mapping[str, Any], out: Translation) -> None:
    aliases = router.get("model_group_alias")
    if not isinstance(aliases, Mapping):
        return
    found: dict[str, str] = {}
    for alias, target in aliases.items():
        group = target.get("model") if isinstance(target, Mapping) else target
        if isinstance(group, str) and group in lanes and alias not in lanes:
            found[str(alias)] = group
        else:
            out.gaps.append(f"router_settings.model_group_alias.{alias}: no lane {group!r}")
    if found:
        out.config["aliases"] = found


def _router_rest(router: Mapping[str, Any], out: Translation) -> None:
    strategy = router.get("routing_strategy", "simple-shuffle")
    if strategy != "simple-shuffle":
        out.gaps.append(
            f"router_settings.routing_strategy: {strategy}: laneway orders sources by health, "
            "then priority, then weight; not carried"
        )
    if router.get("allowed_fails_policy") is not None:
        out.gaps.append(
            "router_settings.allowed_fails_policy: laneway's breaker counts failures of every "
            "kind alike (rejections never); not carried"
        )
    if router.get("enable_pre_call_checks"):
        out.header.append(
            "router_settings.enable_pre_call_checks: laneway moves a context-length refusal to "
            "a source with a larger context_window (from model_info.max_input_tokens)"
        )
    _redis(router, out)
    for key in sorted(set(router) - ROUTER_READ - {"allowed_fails_policy"}):
        out.gaps.append(f"router_settings.{key}: no laneway equivalent; not carried")


def _redis(router: Mapping[str, Any], out: Translation) -> None:
    url = _literal_redis(router)
    if url is None and any(router.get(k) for k in ("redis_url", "redis_host")):
        out.gaps.append(
            "router_settings.redis_*: a secret reference; laneway's state.url is a literal "
            "redis:// URL: write it by hand"
        )
    elif url is not None:
        out.config["state"] = {"url": url}


def _literal_redis(settings: Mapping[str, Any], prefix: str = "redis_") -> str | None:
    url = settings.get(f"{prefix}url")
    if isinstance(url, str):
        return None if url.startswith("os.environ/") else url
    parts = [settings.get(f"{prefix}{k}") for k in ("host", "port", "password")]
    if any(isinstance(p, str) and p.startswith("os.environ/") for p in parts):
        return None
    host, port, password = parts
    if not host:
        return None
    auth = f":{password}@" if password else ""
    return f"redis://{auth}{host}:{port or 6379}"


def _litellm_rest(lite: Mapping[str, Any], lanes: Mapping[str, Any], out: Translation) -> None:
    for key in sorted(set(lite) - LITELLM_READ):
        if key in LOGGING_ONLY:
            out.header.append(f"litellm_settings.{key}: logging only; laneway logs its own way")
        else:
            out.gaps.append(f"litellm_settings.{key}: no laneway equivalent; not carried")


def _general(general: Mapping[str, Any], out: Translation) -> None:
    for key, value in general.items():
        if key == "master_key":
            out.config.setdefault("server", {})["keys"] = [{"name": "master", "key": value}]
        elif key == "database_url" and _postgres(value):
            out.config["telemetry"] = {"url": value}
        else:
            out.gaps.append(f"general_settings.{key}: no laneway equivalent; not carried")


def _postgres(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("postgresql://", "postgres://"))


def _top_rest(data: Mapping[str, Any], out: Translation) -> None:
    for key in sorted(set(data) - TOP_READ):
        if key == "environment_variables":
            out.gaps.append(
                "environment_variables: laneway reads the environment and a .env beside "
                "laneway.yaml; move them there"
            )
        else:
            out.gaps.append(f"{key}: no laneway equivalent; not carried")


def _cache(lite: Mapping[str, Any], lanes: Mapping[str, Any], out: Translation) -> None:
    """LiteLLM's cache (off unless ``cache: true``) as laneway's (off unless a lane declares
    one): every chat lane caches every request, as LiteLLM does, and embed lanes per item."""
    found = lite.get("cache_params")
    params: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    enabled = bool(lite.get("cache"))
    if enabled:
        kind = params.get("type", "local")
        url = {"local": ":memory:"}.get(kind) if kind != "redis" else _literal_redis(params, "")
        if url is not None:
            out.config["cache"] = {"url": url}
        elif kind != "disk":
            out.gaps.append(f"litellm_settings.cache_params.type: {kind}: no laneway cache store")
            enabled = False
    if not enabled:
        return
    ttl = _number(params.get("ttl"))
    for name, lane in lanes.items():
        if lane["kind"] == "embed":
            lane["embed_cache"] = True
            continue
        lane["cache"] = {"ttl": f"{ttl or UNSET_CACHE_TTL:g}s"}
        if ttl is None:
            out.notes[name].append(
                f"cache: LiteLLM keeps a cached answer with no ttl until its store evicts it; "
                f"laneway needs one: {UNSET_CACHE_TTL:g}s is written, change it"
            )
    for key in sorted(set(params) - {"type", "host", "port", "password", "url", "ttl"}):
        out.gaps.append(f"litellm_settings.cache_params.{key}: no laneway equivalent")
