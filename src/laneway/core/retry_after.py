"""Reading an upstream's pushback: ``retry-after-ms`` and ``Retry-After``.

Follows openai-python's order (milliseconds header first, then seconds, then
an HTTP date), as a pure function of the headers and the wall time.
"""

from __future__ import annotations

from collections.abc import Mapping
from email.utils import parsedate_to_datetime


def parse_retry_after(headers: Mapping[str, str], wall_now: float) -> float | None:
    """Return the wait the upstream asked for, in seconds, or ``None``.

    Header names must be lower-case. Negative or unparsable values are ``None``:
    an unreadable pushback is treated as no pushback, not as "retry now".
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        value = _number(millis)
        if value is not None:
            return value / 1000.0
    text = headers.get("retry-after")
    if text is None:
        return None
    seconds = _number(text)
    if seconds is not None:
        return seconds
    return _http_date(text, wall_now)


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value >= 0 and value == value else None


def _http_date(text: str, wall_now: float) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - wall_now)
