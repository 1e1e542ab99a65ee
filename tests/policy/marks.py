"""Outcome logs for policy tests: ``log((0.0, "failed"), (1.0, "ok"))``."""

from __future__ import annotations

from laneway.core.outcomes import Mark


def log(*entries: tuple[float, str]) -> tuple[Mark, ...]:
    """Marks from ``(at, code)`` pairs."""
    return tuple(Mark(at, code) for at, code in entries)


def failures(*times: float) -> tuple[Mark, ...]:
    """Breaker-counting failures at ``times``."""
    return log(*((t, "failed") for t in times))
