"""``model_list`` entries as laneway deployments: wire format, base URL, kind, dimensions."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from laneway.migrate.litellm.shared import (
    PLACEHOLDER_HOST,
    Translation,
    as_int,
    as_number,
    is_ref,
    referenced,
)

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
    "xai": ("openai", "https://api.x.ai/v1"),
    "ollama": ("openai", "http://localhost:11434"),
    "ollama_chat": ("openai", "http://localhost:11434"),
}
"""LiteLLM provider prefixes laneway speaks: its wire format and the default base URL."""
OLLAMA = frozenset({"ollama", "ollama_chat"})
"""LiteLLM calls Ollama's native API; laneway its OpenAI-compatible one, under ``/v1``."""
UNPREFIXED = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("text-embedding-", "openai"),
    ("dall-e", "openai"),
    ("whisper", "openai"),
    ("tts-", "openai"),
    ("claude-", "anthropic"),
)
"""A model with no ``provider/`` prefix: LiteLLM finds its provider in its model lists
(``litellm/litellm_core_utils/get_llm_provider_logic.py``, ``get_llm_provider``);
these are the names of those lists laneway speaks."""
ANTHROPIC_MAX_TOKENS = 4096
"""LiteLLM's default ``max_tokens`` for Anthropic calls that give none."""

MODES = {"chat": "chat", "responses": "chat", "embedding": "embed"}
"""LiteLLM ``model_info.mode`` values with a laneway lane kind."""
NAMED_MODES = (
    ("embed", "embedding"),
    ("rerank", "rerank"),
    ("dall-e", "image_generation"),
    ("whisper", "audio_transcription"),
    ("tts-", "audio_speech"),
    ("moderation", "moderation"),
)
"""The usual names of models whose mode is not chat, when neither ``model_info.mode``
nor LiteLLM's model map says."""
DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
}
"""Native vector lengths of embedding models that take a ``dimensions`` parameter; a
lane's ``dimensions`` is sent upstream, so models that refuse one (ada-002) get none."""

DEPLOYMENT_PARAMS = frozenset(
    {"model", "api_base", "api_key", "api_version", "rpm", "tpm", "max_retries"}
    | {"input_cost_per_token", "output_cost_per_token"}
)
LANE_PARAMS = frozenset({"timeout", "request_timeout", "stream_timeout", "num_retries"})
SOURCE_PARAMS = frozenset({"order", "weight"})
MODEL_INFO = frozenset(
    {"mode", "max_input_tokens", "input_cost_per_token", "output_cost_per_token", "id"}
    | {"output_vector_size"}
)
MODEL_INFO_INERT = frozenset(
    {"base_model", "description", "max_tokens", "max_output_tokens", "supports_vision"}
    | {"supports_function_calling", "health_check_timeout"}
)
"""model_info keys LiteLLM reads for display, its health checks or its cost map only."""


@cache
def model_map() -> Mapping[str, Any]:
    """LiteLLM's own model map (mode, vector size) where litellm is installed, else empty."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        data = json.loads((folder / "model_prices_and_context_window_backup.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def provider_of(model: str) -> tuple[str, str]:
    """``(prefix, model)``: the LiteLLM provider prefix, inferred where the model has none."""
    prefix, slash, rest = model.partition("/")
    if slash:
        return prefix, rest
    known = model_map().get(model)
    found = known.get("litellm_provider") if isinstance(known, Mapping) else None
    inferred = next((p for start, p in UNPREFIXED if model.startswith(start)), "")
    return str(found or inferred), model


def mode_of(model: str, info: Mapping[str, Any]) -> str:
    """LiteLLM's mode for a deployment: ``model_info.mode``, its model map, the usual names."""
    if isinstance(info.get("mode"), str):
        return str(info["mode"])
    known = model_map().get(model)
    if isinstance(known, Mapping) and isinstance(known.get("mode"), str):
        return str(known["mode"])
    lowered = model.lower()
    return next((mode for part, mode in NAMED_MODES if part in lowered), "chat")


def dimensions_of(model: str, info: Mapping[str, Any]) -> int | None:
    """The vector length to declare: ``model_info.output_vector_size``, else the table."""
    declared = as_int(info.get("output_vector_size"))
    return declared or DIMENSIONS.get(model.rsplit("/", 1)[-1])


def deployment(name: str, entry: Mapping[str, Any], out: Translation) -> dict[str, Any] | None:
    """One ``model_list`` entry as a deployment, or ``None`` (a gap) when laneway cannot call it."""
    params: Mapping[str, Any] = entry["litellm_params"]
    found = entry.get("model_info")
    info: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    out.seen.update(f"model_list[].litellm_params.{k}" for k in params)
    out.seen.update(f"model_list[].model_info.{k}" for k in info)
    where = f"model_list[{name}]"
    model = str(params.get("model", ""))
    prefix, rest = provider_of(model)
    if "*" in model:
        out.gaps.append(
            f"{where}.litellm_params.model: {model!r}: laneway has no wildcard routing; name "
            "each model a lane serves"
        )
        return None
    if prefix not in PROVIDERS or not rest:
        out.gaps.append(
            f"{where}.litellm_params.model: {model!r}: provider {prefix or '(none)'} is not "
            "one laneway speaks (the OpenAI, Azure, Anthropic and Gemini wire formats); "
            "this deployment is left out"
        )
        return None
    provider = PROVIDERS[prefix][0]
    base_url = _base_url(prefix, params, where, out)
    if base_url is None:
        return None
    carried: dict[str, Any] = {"provider": provider, "base_url": base_url, "model": rest}
    for key in ("api_key", "rpm", "tpm"):
        if params.get(key) is not None:
            carried[key] = params[key]
    if params.get("api_version") is not None:
        version = params["api_version"]
        carried["api_version"] = (
            version.isoformat() if hasattr(version, "isoformat") else str(version)
        )
    if params.get("max_retries") is not None:
        _once(
            out,
            "litellm_params.max_retries: the provider client's own retries, which LiteLLM's "
            "Router sets to 0 (litellm/router.py, Router.__init__: default_litellm_params "
            "max_retries 0; its retry loop is the only one): inert, as in laneway",
        )
    if provider == "anthropic":
        carried["max_tokens"] = ANTHROPIC_MAX_TOKENS
    _info(carried, params, info, where, out)
    for key in sorted(set(params) - DEPLOYMENT_PARAMS - LANE_PARAMS - SOURCE_PARAMS):
        out.gaps.append(f"{where}.litellm_params.{key}: no laneway equivalent; not carried")
    return carried


def _base_url(prefix: str, params: Mapping[str, Any], where: str, out: Translation) -> str | None:
    """``api_base``, else the provider's default; ``None`` (a gap) when neither is usable."""
    base_url = params.get("api_base") or PROVIDERS[prefix][1]
    if base_url is None:
        out.gaps.append(f"{where}.litellm_params.api_base: {prefix} needs one; left out")
        return None
    referenced(base_url, out, f"http://{PLACEHOLDER_HOST}:1")
    if prefix in OLLAMA and is_ref(base_url):
        return "${" + str(base_url).removeprefix("os.environ/") + "}/v1"
    if prefix in OLLAMA:
        return f"{str(base_url).rstrip('/')}/v1"
    return str(base_url)


def _info(
    carried: dict[str, Any],
    params: Mapping[str, Any],
    info: Mapping[str, Any],
    where: str,
    out: Translation,
) -> None:
    """Context window and price from model_info (litellm_params' costs win, as in LiteLLM)."""
    if isinstance(info.get("max_input_tokens"), int):
        carried["context_window"] = info["max_input_tokens"]
    costs = {**info, **params}
    price_in = as_number(costs.get("input_cost_per_token"))
    price_out = as_number(costs.get("output_cost_per_token"))
    if price_in is not None and price_out is not None:
        carried["price"] = {"input": round(price_in * 1e6, 6), "output": round(price_out * 1e6, 6)}
    elif price_in is not None or price_out is not None:
        out.gaps.append(
            f"{where}: input_cost_per_token and output_cost_per_token: one without the other "
            "(LiteLLM prices the missing one at $0); laneway prices both or neither; not carried"
        )
    key = params.get("api_key")
    if key is not None and not is_ref(key):
        out.literal_keys.append(where.removeprefix("model_list[").removesuffix("]"))
    for name in sorted(set(info) & MODEL_INFO_INERT):
        _once(out, f"model_info.{name}: informational in LiteLLM (display, health checks)")
    for name in sorted(set(info) - MODEL_INFO - MODEL_INFO_INERT):
        out.gaps.append(f"{where}.model_info.{name}: no laneway equivalent; not carried")


def _once(out: Translation, note: str) -> None:
    if note not in out.header:
        out.header.append(note)
