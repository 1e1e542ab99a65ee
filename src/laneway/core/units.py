"""Parsing of the human units used in laneway.yaml: durations and sizes."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_DURATION_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB|KB|MB|GB)\s*$")
_SIZE_SCALE = {
    "B": 1,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
}


def parse_duration(text: str | float | int) -> float:
    """Return seconds for ``250ms``, ``7s``, ``2m``, ``1h``, ``7d`` (a bare number is seconds)."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"negative duration: {text!r}")
        return float(text)
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (write e.g. 250ms, 7s, 2m, 7d)")
    return float(match.group(1)) * _DURATION_SCALE[match.group(2)]


def parse_size(text: str | int) -> int:
    """Return bytes for ``32MiB``, ``512KiB``, ``1GB`` (a bare integer is bytes)."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"negative size: {text!r}")
        return text
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (write e.g. 512KiB, 32MiB)")
    return int(match.group(1)) * _SIZE_SCALE[match.group(2)]


def format_duration(seconds: float) -> str:
    """Render seconds the way laneway.yaml writes them."""
    if seconds == float("inf"):
        return "∞"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:.2f}s"
