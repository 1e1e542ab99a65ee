"""Parse the behaviour spec of a sim URL (`/b/<spec>/v1/...`) into a `Behaviour`.

A spec is a comma-separated list of `key` or `key=value` tokens. Parsing is pure
and each spec string is parsed once per app, so the request path stays cheap.

`scale=F` multiplies every duration of the spec (waits, `Retry-After` values,
outage lengths) by `F`, so a scenario written in real seconds runs ten times
faster with `scale=0.1`. The `rpm` window stays 60 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass(frozen=True, slots=True)
class Behaviour:
    """What one spec asks the sim to do; each field is named after its URL token."""

    sleep: float = 0.0
    slow: float | None = None
    slow_sleep: float = 0.0
    status: int | None = None
    retry_after: str | None = None
    retry_after_ms: str | None = None
    retry_after_date: float | None = None
    fail_first: int | None = None
    fail_after: int | None = None
    flaky: float | None = None
    seed: int = 0
    nousage: bool = False
    dims: int | None = None
    empty: bool = False
    ttfb: float = 0.0
    cut_after: int | None = None
    stall_after: int | None = None
    hold_after: int | None = None
    hold: bool = False
    nodone: bool = False
    malformed: int | None = None
    content_filter: bool = False
    context_length: bool = False
    window: int | None = None
    reject_prefill: bool = False
    reasoning: bool = False
    echo_key: bool = False
    chunks: int = 5
    delay: float = 0.0
    rpm: int | None = None
    bucket: str | None = None
    no_retry_after: bool = False
    flap: float | None = None
    down_for: float | None = None
    no_headers: bool = False
    reset: bool = False
    end_without_done: bool = False
    model: str | None = None
    id: str | None = None
    json_after: int | None = None

    @property
    def fails_conditionally(self) -> bool:
        """Whether `status` only names the code of a conditional fault instead of always firing."""
        conditions = (self.fail_first, self.fail_after, self.flaky, self.flap, self.down_for)
        return any(condition is not None for condition in conditions)


class SpecError(ValueError):
    """A spec token is unknown or carries an invalid value."""

    def __init__(self, token: str, reason: str) -> None:
        super().__init__(f"bad sim spec token {token!r}: {reason}")
        self.token = token


def _seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("expected a finite number of seconds >= 0")
    return value


def _positive_seconds(text: str) -> float:
    value = _seconds(text)
    if value == 0:
        raise ValueError("expected a number of seconds > 0")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("expected an integer >= 0")
    return value


def _positive_count(text: str) -> int:
    value = _count(text)
    if value == 0:
        raise ValueError("expected an integer >= 1")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError("expected a probability between 0 and 1")
    return value


def _status(text: str) -> int:
    value = int(text)
    if not 100 <= value <= 599:
        raise ValueError("expected an HTTP status between 100 and 599")
    return value


def _header_seconds(text: str) -> str:
    """Keep the text as given so clients can be tested on odd forms such as `1.5`."""
    _seconds(text)
    return text


def _name(text: str) -> str:
    if not text:
        raise ValueError("expected a non-empty value")
    return text


_FLAG_TOKENS = frozenset(
    {
        "nousage",
        "empty",
        "nodone",
        "content_filter",
        "context_length",
        "reject_prefill",
        "reasoning",
        "echo_key",
        "no_retry_after",
        "no_headers",
        "reset",
        "end_without_done",
        "hold",
    }
)

_VALUE_TOKENS: dict[str, Callable[[str], object]] = {
    "sleep": _seconds,
    "slow": _probability,
    "slow_sleep": _seconds,
    "status": _status,
    "retry_after": _header_seconds,
    "retry_after_ms": _header_seconds,
    "retry_after_date": _seconds,
    "fail_first": _count,
    "fail_after": _count,
    "flaky": _probability,
    "seed": int,
    "dims": _positive_count,
    "ttfb": _seconds,
    "cut_after": _count,
    "stall_after": _count,
    "hold_after": _count,
    "malformed": _count,
    "window": _count,
    "chunks": _count,
    "delay": _seconds,
    "rpm": _positive_count,
    "bucket": _name,
    "flap": _positive_seconds,
    "down_for": _positive_seconds,
    "scale": _positive_seconds,
    "model": _name,
    "id": _name,
    "json_after": _count,
}


def _token_value(token: str) -> tuple[str, object]:
    key, has_value, text = token.partition("=")
    if key in _FLAG_TOKENS and not has_value:
        return key, True
    if key in _VALUE_TOKENS and has_value:
        try:
            return key, _VALUE_TOKENS[key](text)
        except ValueError as exc:
            raise SpecError(token, str(exc)) from exc
    if key in _FLAG_TOKENS or key in _VALUE_TOKENS or key == "ok":
        raise SpecError(token, "takes a value" if key in _VALUE_TOKENS else "takes no value")
    raise SpecError(token, "unknown token")


_DURATIONS = ("sleep", "slow_sleep", "ttfb", "delay", "flap", "down_for", "retry_after_date")
"""Fields in seconds that `scale` multiplies."""
_HEADER_DURATIONS = ("retry_after", "retry_after_ms")
"""Header values (kept as text) that `scale` multiplies."""


def _scaled(fields: dict[str, Any], scale: float) -> dict[str, Any]:
    """`fields` with every duration times `scale`; header values stay plain numbers."""
    scaled = dict(fields)
    for key in _DURATIONS:
        if key in scaled:
            scaled[key] = scaled[key] * scale
    for key in _HEADER_DURATIONS:
        if key in scaled:
            scaled[key] = f"{float(scaled[key]) * scale:g}"
    return scaled


def parse_spec(spec: str) -> Behaviour:
    """Turn a spec string into a `Behaviour`; a repeated token keeps its last value.

    Raises:
        SpecError: a token is unknown or its value is invalid.
    """
    fields: dict[str, Any] = {}
    for token in spec.split(","):
        if token and token != "ok":
            key, value = _token_value(token)
            fields[key] = value
    scale = fields.pop("scale", None)
    return Behaviour(**(fields if scale is None else _scaled(fields, scale)))
