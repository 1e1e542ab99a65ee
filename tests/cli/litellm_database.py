"""A LiteLLM proxy database in PostgreSQL, built from the columns of LiteLLM's own schema.

The DDL is a subset of LiteLLM's tables, with their columns, types and defaults as LiteLLM's
migrations create them: ``litellm-proxy-extras`` 0.4.110 (PyPI, MIT; the schema litellm
1.110.2 ships as ``litellm/proxy/schema.prisma``),
``litellm_proxy_extras/migrations/20250326162113_baseline/migration.sql`` for the
``LiteLLM_VerificationToken``, ``LiteLLM_TeamTable``, ``LiteLLM_UserTable`` and
``LiteLLM_OrganizationTable`` columns it creates, and the later migrations for those they
add: ``20250416185146_add_allowed_routes_litellm_verification_token`` (``allowed_routes``),
``20260107111013_add_router_settings_to_keys_teams`` (``router_settings``),
``20260218231534_add_last_active_to_key_table`` (``last_active``),
``20260713230852_add_key_type_to_litellm_verification_token`` (``key_type``),
``20260913000000_add_tpd_limit`` (``tpd_limit``) and ``20260916000000_add_key_total_spend``
(``total_spend``). Foreign keys and indexes are left out: the importer reads rows only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import orjson

DDL = [
    """CREATE TABLE "LiteLLM_OrganizationTable" (
    "organization_id" TEXT NOT NULL,
    "organization_alias" TEXT NOT NULL,
    "budget_id" TEXT NOT NULL,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "models" TEXT[],
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    "model_spend" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_by" TEXT NOT NULL,
    CONSTRAINT "LiteLLM_OrganizationTable_pkey" PRIMARY KEY ("organization_id"))""",
    """CREATE TABLE "LiteLLM_TeamTable" (
    "team_id" TEXT NOT NULL,
    "team_alias" TEXT,
    "organization_id" TEXT,
    "admins" TEXT[],
    "members" TEXT[],
    "members_with_roles" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "max_budget" DOUBLE PRECISION,
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    "models" TEXT[],
    "max_parallel_requests" INTEGER,
    "tpm_limit" BIGINT,
    "rpm_limit" BIGINT,
    "budget_duration" TEXT,
    "budget_reset_at" TIMESTAMP(3),
    "blocked" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "model_spend" JSONB NOT NULL DEFAULT '{}',
    "model_max_budget" JSONB NOT NULL DEFAULT '{}',
    "model_id" INTEGER,
    "router_settings" JSONB DEFAULT '{}',
    "tpd_limit" BIGINT,
    CONSTRAINT "LiteLLM_TeamTable_pkey" PRIMARY KEY ("team_id"))""",
    """CREATE TABLE "LiteLLM_UserTable" (
    "user_id" TEXT NOT NULL,
    "user_alias" TEXT,
    "team_id" TEXT,
    "sso_user_id" TEXT,
    "organization_id" TEXT,
    "password" TEXT,
    "teams" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "user_role" TEXT,
    "max_budget" DOUBLE PRECISION,
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    "user_email" TEXT,
    "models" TEXT[],
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "max_parallel_requests" INTEGER,
    "tpm_limit" BIGINT,
    "rpm_limit" BIGINT,
    "budget_duration" TEXT,
    "budget_reset_at" TIMESTAMP(3),
    "allowed_cache_controls" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "model_spend" JSONB NOT NULL DEFAULT '{}',
    "model_max_budget" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "LiteLLM_UserTable_pkey" PRIMARY KEY ("user_id"))""",
    """CREATE TABLE "LiteLLM_VerificationToken" (
    "token" TEXT NOT NULL,
    "key_name" TEXT,
    "key_alias" TEXT,
    "soft_budget_cooldown" BOOLEAN NOT NULL DEFAULT false,
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    "expires" TIMESTAMP(3),
    "models" TEXT[],
    "aliases" JSONB NOT NULL DEFAULT '{}',
    "config" JSONB NOT NULL DEFAULT '{}',
    "user_id" TEXT,
    "team_id" TEXT,
    "permissions" JSONB NOT NULL DEFAULT '{}',
    "max_parallel_requests" INTEGER,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "blocked" BOOLEAN,
    "tpm_limit" BIGINT,
    "rpm_limit" BIGINT,
    "max_budget" DOUBLE PRECISION,
    "budget_duration" TEXT,
    "budget_reset_at" TIMESTAMP(3),
    "allowed_cache_controls" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "model_spend" JSONB NOT NULL DEFAULT '{}',
    "model_max_budget" JSONB NOT NULL DEFAULT '{}',
    "budget_id" TEXT,
    "organization_id" TEXT,
    "created_at" TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT,
    "updated_at" TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP,
    "updated_by" TEXT,
    "allowed_routes" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "router_settings" JSONB DEFAULT '{}',
    "last_active" TIMESTAMP(3),
    "key_type" TEXT,
    "tpd_limit" BIGINT,
    "total_spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    CONSTRAINT "LiteLLM_VerificationToken_pkey" PRIMARY KEY ("token"))""",
]


def hash_token(secret: str) -> str:
    """LiteLLM's ``hash_token`` (``litellm/proxy/utils.py``): what its ``token`` column holds."""
    return hashlib.sha256(secret.encode()).hexdigest()


async def create(dsn: str, schema: str, *, tables: bool = True) -> None:
    """Make ``schema`` (with LiteLLM's tables unless ``tables`` is false)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        if tables:
            await conn.execute(f'SET search_path TO "{schema}"')
            for statement in DDL:
                await conn.execute(statement)
    finally:
        await conn.close()


async def insert(dsn: str, schema: str, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` (column to value; maps and JSON as JSONB) into ``schema.table``."""
    conn = await asyncpg.connect(dsn)
    try:
        for row in rows:
            columns = ", ".join(f'"{c}"' for c in row)
            marks = ", ".join(
                f"${n}::jsonb" if isinstance(v, dict) else f"${n}"
                for n, v in enumerate(row.values(), 1)
            )
            values = [orjson.dumps(v).decode() if isinstance(v, dict) else v for v in row.values()]
            await conn.execute(
                f'INSERT INTO "{schema}"."{table}" ({columns}) VALUES ({marks})', *values
            )
    finally:
        await conn.close()
