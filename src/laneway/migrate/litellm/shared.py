"""What every part of the LiteLLM translation shares: the result, the router-wide values.

Every precedence rule below is LiteLLM's own, read in its source
(BerriAI/litellm; the file and function are named where the rule is
encoded). The proxy hands ``router_settings`` keys to ``litellm.Router(...)``
as arguments (only those the Router takes) and sets each
``litellm_settings`` key as a module attribute ``litellm.<key>``
(``litellm/proxy/proxy_server.py``, ``ProxyConfig.load_config``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ENV_REF = re.compile(r"^os\.environ/([A-Za-z_][A-Za-z0-9_]*)$")
"""LiteLLM's secret reference; laneway reads the same form and it is written as found."""


@dataclass(slots=True)
class Translation:
    """A translated config: ``config`` as plain data, the comments, and the gaps."""

    config: dict[str, Any]
    notes: dict[str, list[str]] = field(default_factory=dict)
    """Per lane: what differs from the header's shared notes for that lane."""
    gaps: list[str] = field(default_factory=list)
    """Keys with no laneway equivalent, each with what it did: the translation is
    complete only when this is empty."""
    header: list[str] = field(default_factory=list)
    """What applies to the whole file: shared lane notes and carried settings."""
    placeholders: dict[str, str] = field(default_factory=dict)
    """A value of the right shape for each variable a URL setting references: the output is
    validated with these (never with the environment), since a URL's form is checked."""
    literal_keys: list[str] = field(default_factory=list)
    """Deployments whose ``api_key`` is written in the file (one header note names them)."""
    seen: set[str] = field(default_factory=set)
    """Every LiteLLM key read, dotted (``router_settings.timeout``), for the corpus report."""

    @property
    def complete(self) -> bool:
        """Whether every key found its laneway equivalent."""
        return not self.gaps


@dataclass(frozen=True, slots=True)
class Settings:
    """The router-wide values a lane falls back on, resolved as LiteLLM resolves them."""

    retries: int | None
    retries_origin: str
    timeout: float | None
    timeout_origin: str
    stream_timeout: float | None
    retry_policy: Mapping[str, Any]
    allowed_fails: int | None
    cooldown: float | None
    retry_after: float


def mapping(data: Mapping[str, Any], key: str, out: Translation) -> Mapping[str, Any]:
    """``data[key]`` when it is a mapping; anything else is a gap."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        out.gaps.append(f"{key}: not a mapping; not read")
        return {}
    return value


def as_number(value: object) -> float | None:
    """A number, or ``None`` for anything else (booleans included)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def as_int(value: object) -> int | None:
    """An int, or ``None`` (booleans are no ints here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


PLACEHOLDER_HOST = "127.0.0.1"


def referenced(value: object, out: Translation, placeholder: str) -> None:
    """Note ``placeholder`` for the variable ``value`` references (a whole ``os.environ/NAME``)."""
    match = ENV_REF.match(value) if isinstance(value, str) else None
    if match is not None:
        out.placeholders[match.group(1)] = placeholder


def is_ref(value: object) -> bool:
    """Whether ``value`` is an ``os.environ/NAME`` reference."""
    return isinstance(value, str) and ENV_REF.match(value) is not None
