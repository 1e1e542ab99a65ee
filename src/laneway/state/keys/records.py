"""Stored keys and teams as records, and how a key's secret is made and hashed.

A secret is ``sk-lw-`` and 32 url-safe random bytes; the store keeps only
its sha256 hex digest (the form LiteLLM's proxy stores its tokens in, so an
imported LiteLLM key matches unchanged) and a short prefix for display.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from laneway.policy import budget as budget_rules

SECRET_PREFIX = "sk-lw-"
VISIBLE = 10
"""Characters of a secret kept for display (``sk-lw-AbCd``): too few to guess the rest."""
PERIODS = budget_rules.PERIODS
"""Budget periods a stored key or team may name (``laneway.policy.budget.PERIODS``)."""


def new_secret() -> str:
    """A fresh key secret (shown once, never stored)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """The sha256 hex digest a secret is stored and looked up as."""
    return hashlib.sha256(secret.encode()).hexdigest()


def visible_prefix(secret: str) -> str:
    """The part of ``secret`` shown in listings."""
    return secret[:VISIBLE]


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits shared by keys and teams (``None``: no such limit)."""

    lanes: tuple[str, ...] = ("*",)
    rpm: int | None = None
    tpm: int | None = None
    max_concurrency: int | None = None
    budget: float | None = None
    period: str | None = None


@dataclass(frozen=True, slots=True)
class TeamRecord:
    """A team: its limits bound its keys' limits."""

    name: str
    limits: Limits = Limits()
    blocked: bool = False
    metadata: Mapping[str, object] = field(default_factory=dict)
    created_at: float = 0.0
    spend: float = 0.0
    """USD the team spent before it came to laneway (an imported LiteLLM team's spend so far):
    it counts against the team's budget in the period ``created_at`` falls in."""


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A stored key (no secret: ``prefix`` is its visible start)."""

    id: str
    name: str
    prefix: str
    team: str | None = None
    limits: Limits = Limits()
    expires_at: float | None = None
    blocked: bool = False
    metadata: Mapping[str, object] = field(default_factory=dict)
    created_at: float = 0.0
    spend: float = 0.0
    """USD spent before the key came to laneway (a LiteLLM key's carried spend)."""

    def usable(self, now: float) -> bool:
        """True while neither blocked nor expired at wall time ``now``."""
        return not self.blocked and (self.expires_at is None or now < self.expires_at)


@dataclass(frozen=True, slots=True)
class Digest:
    """One sha256 digest that authenticates a key, until ``valid_until`` (a rotated secret)."""

    sha256: str
    key_id: str
    valid_until: float | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The store's keys, teams and digests at one ``version``."""

    version: int
    keys: Mapping[str, KeyRecord]
    teams: Mapping[str, TeamRecord]
    digests: tuple[Digest, ...]


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One admin action: who, what, on which record, the record before and after."""

    at: float
    admin: str
    action: str
    target: str
    before: Mapping[str, object] | None
    after: Mapping[str, object] | None
