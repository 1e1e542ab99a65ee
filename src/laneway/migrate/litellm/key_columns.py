"""Every column of LiteLLM's key and team tables, and what becomes of it in laneway.

The columns are those of ``LiteLLM_VerificationToken`` and ``LiteLLM_TeamTable`` in
LiteLLM's ``schema.prisma`` (``litellm-proxy-extras`` 0.4.110, the schema litellm 1.110.2
ships as ``litellm/proxy/schema.prisma``). A column is read (``READ_*``), only bookkeeping
(``BOOKKEEPING``: nothing a call depends on), or not carried: each such column set on a row
is reported with the reason here, and a column this table does not know (a newer LiteLLM)
is reported as unread. ``metadata`` keys LiteLLM itself acts on
(``LiteLLM_ManagementEndpoint_MetadataFields`` and its premium list in
``litellm/proxy/_types.py``) are reported by name, never by value (``logging`` and
``secret_manager_settings`` hold credentials); the rest is the caller's own and is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

READ_KEY = frozenset(
    {"token", "key_name", "key_alias", "spend", "total_spend", "expires", "models"}
    | {"team_id", "user_id", "organization_id", "project_id", "max_parallel_requests"}
    | {"metadata", "blocked", "tpm_limit", "rpm_limit", "max_budget", "budget_duration"}
    | {"budget_reset_at", "created_at", "created_by", "last_active", "allowed_routes"}
    | {"key_type"}
)
READ_TEAM = frozenset(
    {"team_id", "team_alias", "organization_id", "admins", "members", "metadata"}
    | {"max_budget", "spend", "models", "max_parallel_requests", "tpm_limit", "rpm_limit"}
    | {"budget_duration", "budget_reset_at", "blocked", "created_at"}
)
BOOKKEEPING = frozenset(
    {"soft_budget_cooldown", "updated_at", "updated_by", "model_spend", "settings_updated_at"}
    | {"rotation_count", "last_rotation_at", "key_rotation_at", "members_with_roles"}
    | {"team_member_permissions", "default_team_member_models", "allow_team_guardrail_config"}
)
"""Display, audit and management-UI state: no call is admitted or refused by them."""

PER_MODEL_BUDGET = (
    "per-model budgets: a laneway budget covers every lane of its key or team (give each "
    "model's callers a key of their own)"
)
NOT_CARRIED = {
    "aliases": "per-key model aliases: laneway's aliases are the config's, the same for every key",
    "config": "per-key call settings: a laneway lane calls the same way for every key",
    "router_settings": (
        "per-key or per-team router settings: a laneway lane's retries and timeouts are the "
        "same for every key"
    ),
    "permissions": "management permissions: laneway's admin API has keys of its own",
    "allowed_cache_controls": "cache controls a caller may send: laneway caches per lane",
    "model_max_budget": PER_MODEL_BUDGET,
    "budget_limits": PER_MODEL_BUDGET,
    "tpd_limit": "tokens per day: laneway limits tokens per minute (tpm)",
    "soft_budget": (
        "soft budgets (an alert, no refusal): laneway alerts at shares of the budget itself"
    ),
    "policies": "guardrail policies: laneway runs no guardrails",
    "access_group_ids": (
        "models from access groups kept in LiteLLM's database: not read, so the key or team "
        "has only the lanes its models name"
    ),
    "budget_fallbacks": "budget fallbacks: a laneway key over its budget is refused",
    "object_permission_id": (
        "MCP server, vector store and agent permissions: laneway serves none of them"
    ),
    "agent_id": "an agent's key: laneway has no agents; carried as a plain key",
    "budget_id": (
        "a budget tier for the key's end users (LiteLLM_BudgetTable): laneway budgets keys "
        "and teams only"
    ),
    "auto_rotate": "automatic rotation: rotate with `laneway keys rotate` or the admin API",
    "rotation_interval": "automatic rotation: rotate with `laneway keys rotate` or the admin API",
    "model_id": (
        "team model aliases (LiteLLM_ModelTable): laneway's aliases are the config's, the "
        "same for every team"
    ),
}
"""Columns with no laneway equivalent, and why, reported where a row sets one."""

MANAGED_METADATA = frozenset(
    {"model_rpm_limit", "model_tpm_limit", "model_itpm_limit", "model_otpm_limit"}
    | {"default_estimated_output_tokens", "default_estimated_output_tokens_per_model"}
    | {"mcp_rpm_limit", "tag_rpm_limit", "rpm_limit_type", "tpm_limit_type", "enforced_params"}
    | {"temp_budget_increase", "temp_budget_expiry", "allowed_vector_store_indexes"}
    | {"enforced_batch_output_expires_after", "enforced_file_expires_after"}
    | {"throttle_on_budget_exceeded", "enable_prompt_caching", "end_user_budget_id"}
    | {"require_trace_id", "disable_global_guardrails", "guardrails", "policies", "tags"}
    | {"team_member_key_duration", "prompts", "logging", "secret_manager_settings"}
    | {"allowed_passthrough_routes", "denied_passthrough_routes"}
)
"""metadata keys LiteLLM enforces or acts on: none has a laneway equivalent."""

METADATA_REASON = (
    "LiteLLM settings kept in metadata (per-model and per-tag limits, guardrails, logging, "
    "enforced params, temporary budget increases...): laneway has no per-key equivalent"
)

MANAGEMENT_KEY = (
    "allowed_routes name no model API (a management or read-only key): laneway keys call "
    "models; not imported (laneway's admin API has keys of its own)"
)

TEAM_COUNTS = (
    "rpm_limit, tpm_limit, max_parallel_requests of a team: LiteLLM counts them across all "
    "the team's keys (parallel_request_limiter, by team_id); laneway bounds each of its keys by "
    "them"
)

ORG_LIMITS = (
    "organization models and budget (LiteLLM_OrganizationTable, LiteLLM_BudgetTable): not read; "
    "its keys and teams keep only their own models and limits"
)

PROJECT_LIMITS = (
    "project budget and limits (LiteLLM_ProjectTable): not read; the project is in the key's "
    "metadata"
)

NO_LANE = "no model of the key maps to a lane: imported with no lanes (every call refused)"

ZERO_LIMIT = (
    "a limit of 0 or a max_budget of 0 or less: LiteLLM refuses every call, laneway's limits "
    "are at least 1; imported blocked"
)


def is_set(value: object) -> bool:
    """True unless ``value`` is LiteLLM's unset form: null, false, empty text, list or map."""
    return value not in (None, False, "", [], {})


def unread(row: Mapping[str, object], read: frozenset[str]) -> list[tuple[str, str]]:
    """``(column, reason)`` for each column of ``row`` that is set and not carried."""
    found = []
    for column, value in row.items():
        if column in read or column in BOOKKEEPING or not is_set(value):
            continue
        if column == "rotation_interval" and not row.get("auto_rotate"):
            continue
        reason = NOT_CARRIED.get(
            column, "a column this importer does not know (a LiteLLM newer than 1.110.2?)"
        )
        found.append((column, reason))
    return found


def split_metadata(value: object) -> tuple[dict[str, object], list[str]]:
    """A row's ``metadata``: the caller's own keys (kept), and the names LiteLLM acts on."""
    if not isinstance(value, Mapping):
        return {}, []
    kept = {str(k): v for k, v in value.items() if k not in MANAGED_METADATA}
    managed = sorted(str(k) for k, v in value.items() if k in MANAGED_METADATA and is_set(v))
    return kept, managed
