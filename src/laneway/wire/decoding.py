"""What every answer reader shares: JSON bodies and events that must be objects, counts.

A body that is not a JSON object is a ``malformed`` attempt failure (the
source's fault, retried elsewhere); a stream event that is not is a
``ValueError``, which the stream reader counts and skips.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.types import Reasoning, Usage


def load_json(body: bytes, what: str) -> dict[str, Any]:
    """Parse an answer body that must be a JSON object."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise AttemptFailure(FailureKind.MALFORMED, f"{what} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise AttemptFailure(FailureKind.MALFORMED, f"{what} is not a JSON object")
    return data


def load_event(data: bytes) -> dict[str, Any]:
    """Parse a stream event that must be a JSON object; ``ValueError`` marks it malformed."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"malformed event: {exc}") from exc
    if not isinstance(event, dict):
        raise ValueError("malformed event: not an object")
    return event


def token_count(value: object) -> int | None:
    """A token count from a parsed answer: an int, else ``None`` (never a guessed 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reasoning_of(carried_text: bool, usage: Usage) -> Reasoning:
    """PRESENT with reasoning text or tokens; ABSENT only on a reported zero."""
    if carried_text or (usage.reasoning_tokens or 0) > 0:
        return Reasoning.PRESENT
    if usage.reasoning_tokens == 0:
        return Reasoning.ABSENT
    return Reasoning.UNKNOWN
