"""The proxy-wide sections: ``router_settings``, ``litellm_settings``, ``general_settings``.

Each key is carried, noted as inert where LiteLLM never reads it, or listed as
a gap with what it did. ``os.environ/NAME`` references are written as found.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from laneway.migrate.litellm.shared import (
    PLACEHOLDER_HOST,
    Translation,
    as_number,
    is_ref,
    referenced,
)

UNSET_CACHE_TTL = 3600.0
"""The ttl written for a LiteLLM cache that sets none (laneway's cache requires one)."""
ROUTER_LANE_KEYS = frozenset(
    {"num_retries", "timeout", "stream_timeout", "retry_policy", "allowed_fails"}
    | {"cooldown_time", "retry_after", "fallbacks", "context_window_fallbacks"}
    | {"default_fallbacks", "content_policy_fallbacks", "model_group_alias"}
)
"""router_settings keys the lanes and fallbacks read."""
LITELLM_LANE_KEYS = frozenset(
    {"num_retries", "request_timeout", "allowed_fails", "fallbacks"}
    | {"context_window_fallbacks", "default_fallbacks", "content_policy_fallbacks"}
)
INERT_IN_LITELLM = frozenset({"retry_policy", "cooldown_time", "retry_after", "timeout"})
"""litellm_settings keys only Router arguments take: set as ``litellm.<key>``, read by nothing."""
LOGGING_ONLY = frozenset({"set_verbose", "json_logs", "telemetry"})
CALLBACK_KEYS = ("callbacks", "success_callback", "failure_callback")
LANGFUSE = (
    "langfuse: set OTEL_EXPORTER_OTLP_ENDPOINT to your Langfuse host + /api/public/otel and "
    "OTEL_EXPORTER_OTLP_HEADERS to Authorization=Basic base64(LANGFUSE_PUBLIC_KEY:"
    "LANGFUSE_SECRET_KEY): Langfuse takes laneway's OpenTelemetry traces"
)
CALLBACKS = {
    "prometheus": "prometheus: laneway serves Prometheus metrics at /metrics, always on",
    "langfuse": LANGFUSE,
    "langfuse_otel": LANGFUSE,
    "otel": (
        "otel: set OTEL_EXPORTER_OTLP_ENDPOINT (laneway reads the standard OpenTelemetry "
        "variables; LiteLLM's OTEL_ENDPOINT and OTEL_HEADERS become OTEL_EXPORTER_OTLP_*)"
    ),
}
DURATIONS = {"1d": "daily", "24h": "daily", "30d": "monthly", "1mo": "monthly"}
"""LiteLLM ``budget_duration`` values that are laneway's budget periods."""


def router_rest(router: Mapping[str, Any], out: Translation) -> None:
    """router_settings keys the lanes do not read: routing, Redis, pre-call checks."""
    strategy = router.get("routing_strategy", "simple-shuffle")
    if strategy != "simple-shuffle":
        out.gaps.append(
            f"router_settings.routing_strategy: {strategy}: laneway orders sources by health, "
            "then priority, then weight; not carried"
        )
    if router.get("enable_pre_call_checks"):
        out.header.append(
            "router_settings.enable_pre_call_checks: laneway moves a context-length refusal to "
            "a source with a larger context_window (from model_info.max_input_tokens)"
        )
    url = redis_url(router, "redis_", out)
    if url is not None:
        out.config["state"] = {"url": url}
    known = ROUTER_LANE_KEYS | {"routing_strategy", "enable_pre_call_checks"}
    known |= {"redis_host", "redis_port", "redis_password", "redis_url"}
    for key in sorted(set(router) - known):
        out.gaps.append(f"router_settings.{key}: no laneway equivalent; not carried")


def redis_url(settings: Mapping[str, Any], prefix: str, out: Translation) -> str | None:
    """A ``redis://`` URL from ``url`` or ``host``/``port``/``password``, or ``None``.

    References stay references: a whole ``os.environ/NAME`` URL as written, and
    parts as ``${NAME}`` inside the URL (laneway resolves both at load).
    """
    url = settings.get(f"{prefix}url")
    if isinstance(url, str):
        referenced(url, out, f"redis://{PLACEHOLDER_HOST}:6379")
        return url
    host, port, password = (settings.get(f"{prefix}{k}") for k in ("host", "port", "password"))
    if not host:
        return None
    referenced(host, out, PLACEHOLDER_HOST)
    referenced(port, out, "6379")
    referenced(password, out, "placeholder")
    if is_ref(password):
        _note_once(out, "redis password from the environment: it must be URL-safe (%-encode it)")
    auth = f":{_embedded(password)}@" if password else ""
    return f"redis://{auth}{_embedded(host)}:{_embedded(port or 6379)}"


def _embedded(value: object) -> str:
    """A part of a URL: an ``os.environ/NAME`` reference as laneway's ``${NAME}``."""
    return re.sub(r"^os\.environ/(\w+)$", r"${\1}", str(value))


def _note_once(out: Translation, note: str) -> None:
    if note not in out.header:
        out.header.append(note)


def litellm_rest(lite: Mapping[str, Any], out: Translation) -> None:
    """litellm_settings keys the lanes do not read: callbacks, budgets, logging, params."""
    for key in sorted(set(lite) - LITELLM_LANE_KEYS - {"cache", "cache_params"}):
        value = lite[key]
        if key in LOGGING_ONLY:
            out.header.append(f"litellm_settings.{key}: logging only; laneway logs its own way")
        elif key in INERT_IN_LITELLM:
            out.header.append(
                f"litellm_settings.{key}: inert in LiteLLM (a Router argument: only "
                "router_settings reaches Router.__init__); nothing to carry"
            )
        elif key in CALLBACK_KEYS:
            _callbacks(key, value, out)
        elif key == "drop_params":
            out.header.append(_DROP_PARAMS if value else "litellm_settings.drop_params: false")
        elif key in ("max_budget", "budget_duration"):
            continue
        else:
            out.gaps.append(f"litellm_settings.{key}: no laneway equivalent; not carried")
    _budget(lite, out)


_DROP_PARAMS = (
    "litellm_settings.drop_params: LiteLLM drops a parameter the provider cannot take; "
    "laneway drops none: an OpenAI-format source gets every parameter as sent (one its "
    "upstream refuses is a 400 to the caller, never retried), and an Anthropic or Gemini "
    "source that cannot express one is skipped for that request (a 400 when no source can)"
)


def _callbacks(key: str, value: object, out: Translation) -> None:
    for name in value if isinstance(value, list) else [value]:
        if str(name) in CALLBACKS:
            note = f"litellm_settings.{key}: {CALLBACKS[str(name)]}"
            if note not in out.header:
                out.header.append(note)
        else:
            out.gaps.append(f"litellm_settings.{key}: {name}: no laneway equivalent")


def _budget(lite: Mapping[str, Any], out: Translation) -> None:
    """The proxy-wide ``max_budget`` per ``budget_duration`` as the master key's budget."""
    budget = as_number(lite.get("max_budget"))
    if not budget:
        if lite.get("budget_duration") is not None:
            out.header.append("litellm_settings.budget_duration: no max_budget; inert")
        return
    period = DURATIONS.get(str(lite.get("budget_duration")))
    keys = out.config.get("server", {}).get("keys", [])
    if period is None or not keys:
        why = "no master_key to carry it" if not keys else "laneway budgets are daily or monthly"
        out.gaps.append(
            f"litellm_settings.max_budget: {budget:g} per {lite.get('budget_duration')}: {why}; "
            "give each key a budget: {daily: N} or {monthly: N}"
        )
        return
    keys[0]["budget"] = {period: budget}
    out.header.append(
        f"litellm_settings.max_budget {budget:g} per {lite.get('budget_duration')}: the master "
        f"key's {period} budget (LiteLLM's caps the whole proxy; give other keys their own)"
    )


def general(general: Mapping[str, Any], out: Translation) -> None:
    """master_key, database_url and max_request_size_mb; the rest are gaps."""
    for key, value in general.items():
        if key == "master_key":
            out.config.setdefault("server", {})["keys"] = [{"name": "master", "key": value}]
        elif key == "database_url" and (is_ref(value) or _postgres(value)):
            referenced(value, out, f"postgresql://{PLACEHOLDER_HOST}/litellm")
            out.config["telemetry"] = {"url": value}
            out.header.append(
                "general_settings.database_url: laneway's call records (telemetry.url); "
                "LiteLLM's key and spend tables are not read from it"
            )
        elif key == "max_request_size_mb" and as_number(value):
            size = as_number(value) or 0.0
            limit = f"{int(size)}MiB" if size.is_integer() else int(size * 1024 * 1024)
            out.config.setdefault("server", {})["max_request_bytes"] = limit
            out.header.append(
                f"general_settings.max_request_size_mb {size:g}: server.max_request_bytes "
                "(LiteLLM enforces it for its enterprise edition only, proxy_server.py "
                "configured_max_request_size_mb; laneway always)"
            )
        else:
            out.gaps.append(f"general_settings.{key}: no laneway equivalent; not carried")


def _postgres(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("postgresql://", "postgres://"))


def top_rest(data: Mapping[str, Any], out: Translation) -> None:
    """Top-level sections beyond the four read ones."""
    read = {"model_list", "router_settings", "litellm_settings", "general_settings"}
    for key in sorted(set(data) - read):
        if key == "environment_variables":
            out.gaps.append(
                "environment_variables: laneway reads the environment and a .env beside "
                "laneway.yaml; move them there"
            )
        else:
            out.gaps.append(f"{key}: no laneway equivalent; not carried")


def cache(lite: Mapping[str, Any], lanes: Mapping[str, Any], out: Translation) -> None:
    """LiteLLM's cache (off unless ``cache: true``) as laneway's (off unless a lane declares
    one): every chat lane caches every request, as LiteLLM does, and embed lanes per item."""
    found = lite.get("cache_params")
    params: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if not lite.get("cache"):
        if params:
            out.header.append("litellm_settings.cache_params: cache is off (no cache: true)")
        return
    kind = params.get("type", "local")
    if kind == "local":
        out.config["cache"] = {"url": ":memory:"}
    elif kind == "redis":
        url = redis_url(params, "", out)
        if url is None:
            out.gaps.append("litellm_settings.cache_params: type redis names no host or url")
            return
        out.config["cache"] = {"url": url}
    elif kind != "disk":
        out.gaps.append(f"litellm_settings.cache_params.type: {kind}: no laneway cache store")
        return
    _lane_caches(as_number(params.get("ttl")), lanes, out)
    known = {"type", "host", "port", "password", "url", "ttl"}
    for key in sorted(set(params) - known):
        out.gaps.append(f"litellm_settings.cache_params.{key}: no laneway equivalent")


def _lane_caches(ttl: float | None, lanes: Mapping[str, Any], out: Translation) -> None:
    for lane in lanes.values():
        if lane["kind"] == "embed":
            lane["embed_cache"] = True
        else:
            lane["cache"] = {"ttl": f"{ttl or UNSET_CACHE_TTL:g}s"}
    if ttl is None:
        out.header.append(
            "cache: LiteLLM keeps a cached answer with no ttl until its store evicts it; "
            f"laneway needs one: {UNSET_CACHE_TTL:g}s is written, change it"
        )
