"""A LiteLLM ``max_budget`` per ``budget_duration`` as a laneway budget, and its spend so far.

LiteLLM 1.110 resets a budget at standardized times
(``litellm/litellm_core_utils/duration_parser.py``, ``get_next_standardized_reset_time``,
in ``litellm_settings.timezone``, default UTC, at ``budget_reset_time``, default 00:00):
``1d`` and ``24h`` at the next midnight, ``7d`` and ``1w`` on the next Monday, ``30d`` and
``1mo`` on the first of the next month; ``daily``, ``weekly`` and ``monthly`` are read as
``24h``, ``7d`` and ``30d`` (``normalize_duration``). Those are laneway's UTC ``day``,
``week`` and ``month``. A budget with no duration never resets: laneway's ``total``.

Any other duration has no laneway period, and is carried as a **stricter** budget, said so:
``N`` days (``Nd``, ``Nw``, ``N*24h``; LiteLLM starts them at a midnight) as the amount
divided by ``N`` per day, so no ``N`` days can spend more than LiteLLM allowed;
``N`` months as the amount divided by ``N`` per month; a period shorter than a day as the
same amount per day. LiteLLM's ``spend`` is what the key spent since its last reset: it
is carried into the laneway period the import falls in (a stricter figure when LiteLLM's
period began earlier), and as nothing when LiteLLM's period had already ended.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

WORDS = {"hourly": "1h", "daily": "24h", "weekly": "7d", "monthly": "30d"}
"""``normalize_duration``'s aliases."""
EXACT = {
    (1, "d"): "day",
    (24, "h"): "day",
    (7, "d"): "week",
    (1, "w"): "week",
    (30, "d"): "month",
    (1, "mo"): "month",
}
"""Durations LiteLLM resets on laneway's own period boundaries."""
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
DAY = 86_400
_SPELLED = re.compile(r"(\d+)([a-z]+)")
_UNIT = re.compile(r"(\d+)(mo|[smhdw]?)")


@dataclass(frozen=True, slots=True)
class Budget:
    """A carried budget: ``amount`` USD per laneway ``period``; ``change`` says how it differs
    from LiteLLM's (``None``: it does not)."""

    amount: float
    period: str
    change: str | None = None


def budget(amount: float, duration: str | None, periods: Collection[str]) -> Budget | str:
    """The laneway budget of ``amount`` per LiteLLM ``duration`` with the ``periods`` laneway
    counts, or why none is carried."""
    if duration is None:
        if "total" in periods:
            return Budget(amount, "total")
        return "a budget with no budget_duration never resets; this laneway has no total budget"
    parsed = _parsed(duration)
    if parsed is None:
        return Budget(
            amount,
            "day",
            f"budget_duration {duration!r} is no duration LiteLLM accepts (it resets one at the "
            "next midnight): carried as a daily budget",
        )
    value, unit = parsed
    exact = EXACT.get(parsed)
    if exact in periods:
        return Budget(amount, str(exact))
    if unit == "mo":
        return Budget(
            amount / value,
            "month",
            f"{_figure(amount)} per {duration}: no laneway period is {duration}; carried as "
            f"{_figure(amount / value)} per month (never more in any {value} months)",
        )
    seconds = value * SECONDS[unit]
    if seconds < DAY:
        return Budget(
            amount,
            "day",
            f"{_figure(amount)} per {duration}: no laneway period is shorter than a day; "
            f"carried as {_figure(amount)} per UTC day (stricter)",
        )
    days, rest = divmod(seconds, DAY)
    spans = days if rest == 0 else days + 2  # a window of whole days starts at a midnight
    return Budget(
        amount / spans,
        "day",
        f"{_figure(amount)} per {duration}: no laneway period is {duration}; carried as "
        f"{_figure(amount / spans)} per UTC day (never more in any {duration})",
    )


def _parsed(duration: str) -> tuple[int, str] | None:
    """``(value, unit)`` as ``_parse_duration`` reads ``duration`` (``30days`` is ``30d``),
    or ``None`` where LiteLLM falls back on the next midnight (and for a zero)."""
    text = WORDS.get(duration.strip().lower(), duration)
    spelled = _SPELLED.match(text)
    found = _UNIT.match(text)
    if spelled is None or found is None or int(spelled.group(1)) == 0:
        return None
    value, unit = int(spelled.group(1)), found.group(2) or spelled.group(2)
    if unit == "mo" and spelled.group(2) != "mo" and value != 1:
        unit = spelled.group(2)
    return (value, unit) if unit == "mo" or unit in SECONDS else None


def spend(spent: float, reset_at: float | None, now: float) -> tuple[float, str | None]:
    """The USD carried as spent in the laneway period of ``now``, and why it differs from
    LiteLLM's ``spent`` (``None``: it does not).

    ``reset_at`` is LiteLLM's ``budget_reset_at``: past it, LiteLLM's reset job zeroes the
    spend at its next run, so none of it belongs to the current period.
    """
    if reset_at is not None and reset_at <= now and spent > 0:
        return 0.0, f"spend {_figure(spent)} belongs to a budget period that ended (not carried)"
    return spent, None


def reset_change(settings: Mapping[str, object]) -> str | None:
    """How LiteLLM's reset time differs from laneway's, from its ``litellm_settings``
    (``timezone``, ``budget_reset_time``; ``timezone_utils.get_budget_reset_settings``), or
    ``None`` where it resets at 00:00 UTC as laneway does."""
    zone = str(settings.get("timezone") or "UTC")
    at = str(settings.get("budget_reset_time") or "00:00")
    if zone.upper() in ("UTC", "ETC/UTC", "GMT") and at in ("00:00", "00:00:00"):
        return None
    return (
        f"LiteLLM resets budgets at {at} {zone} (litellm_settings.timezone, budget_reset_time); "
        "laneway's day, week and month begin at 00:00 UTC"
    )


def _figure(usd: float) -> str:
    """USD as written in a note: up to 6 significant digits, no trailing zeros."""
    if usd and math.isfinite(usd) and abs(usd) < 0.01:
        return f"${usd:.2g}"
    return f"${usd:,.6g}"
