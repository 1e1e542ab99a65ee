"""``laneway keys``: every configured key, its lanes, its limits, and its spend today.

Keys are listed by name with how they are stored (a variable or a sha256
digest), never their value. Spend today (since 00:00 UTC, the period of a
daily budget) comes from telemetry; when telemetry cannot be read it says so
instead of a figure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from laneway.cli.helptext import summary
from laneway.cli.spend import SpendUnreadable, key_names, read_spend, render_cost
from laneway.cli.stored_keys import KEY_COMMANDS
from laneway.config.load import load_config
from laneway.config.models import KeyConfig
from laneway.core.errors import ConfigError
from laneway.telemetry import SpendRow

HEADER = ["key", "stored as", "lanes", "limits", "spend today"]


def main(argv: Sequence[str]) -> int:
    """Print the key table; non-zero when the config cannot be read. ``create``, ``list``,
    ``revoke`` and ``rotate`` work on stored keys (``laneway.cli.stored_keys``)."""
    if any(a in KEY_COMMANDS or a.startswith("--admin") for a in argv):
        from laneway.cli.stored_keys import main as stored_main

        return stored_main(argv)
    ns = _parser().parse_args(argv)
    path = Path(ns.config or ns.path or "laneway.yaml")
    try:
        config, _ = load_config(path)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not config.server.keys:
        print("no server.keys configured: the gateway is open (and binds loopback only)")
        return 0
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        rows = read_spend(config, path, midnight.timestamp(), "key") or []
        spent: Mapping[str, SpendRow] | str = {
            key_names(config).get(r.group or "", ""): r for r in rows
        }
    except SpendUnreadable as exc:
        spent = f"n/a ({exc})"
    print(render_keys(config.server.keys, spent))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="laneway keys", description=summary(__doc__))
    parser.add_argument("path", nargs="?", help="the config (default: laneway.yaml)")
    parser.add_argument("--config", help="the config (the same as the positional path)")
    return parser


def render_keys(keys: Sequence[KeyConfig], spent: Mapping[str, SpendRow] | str) -> str:
    """The table; ``spent`` maps key names to today's row, or says why spend is unknown."""
    table = [HEADER]
    for key in keys:
        today = spent if isinstance(spent, str) else _today(spent.get(key.name))
        table.append([key.name, _stored(key), ", ".join(key.lanes) or "(none)", limits(key), today])
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table
    )


def limits(key: KeyConfig) -> str:
    """The key's limits in config words; ``none`` when it has none."""
    parts = [
        f"{name} {value}"
        for name, value in (
            ("rpm", key.rpm),
            ("tpm", key.tpm),
            ("max_concurrency", key.max_concurrency),
        )
        if value is not None
    ]
    if key.budget is not None:
        for field, period in (("daily", "day"), ("weekly", "week"), ("monthly", "month")):
            cap = getattr(key.budget, field)
            if cap is not None:
                parts.append(f"${cap:g}/{period}")
        if key.budget.total is not None:
            parts.append(f"${key.budget.total:g} in all")
    if key.allow_unpriced:
        parts.append("allow_unpriced")
    return ", ".join(parts) or "none"


def _stored(key: KeyConfig) -> str:
    if key.sha256 is not None:
        return "sha256"
    assert key.key is not None
    return f"${key.key.env}" if key.key.env else "literal"


def _today(row: SpendRow | None) -> str:
    if row is None:
        return "$0 (no calls)"
    return f"{render_cost(row)} ({row.calls} calls)"
