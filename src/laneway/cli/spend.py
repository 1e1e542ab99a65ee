"""``laneway spend``: calls, tokens and cost by lane, source, model or key.

Reads the telemetry database the config names (SQLite or PostgreSQL). Unknown
stays visible: a group with no priced call reads ``unpriced`` or ``n/a``,
never ``$0``; a cost that leaves calls out reads as a floor (``>=``); token
sums cover provider-reported usage, and estimates are shown apart.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from laneway.cli.helptext import summary
from laneway.config.load import load_config
from laneway.config.models import LanewayConfig
from laneway.core.errors import ConfigError
from laneway.core.units import parse_duration
from laneway.telemetry import (
    SpendRow,
    SqliteTelemetryStore,
    TelemetryStore,
    caller_hash,
    store_for_url,
)

HEADER = [
    "calls",
    "errors",
    "prompt",
    "completion",
    "reasoning",
    "cost",
    "unpriced",
    "usage unknown",
    "estimated",
    "est. cost",
]


class SpendUnreadable(Exception):
    """Telemetry is off or its database cannot be read; the message says which."""


def main(argv: Sequence[str]) -> int:
    """Print the spend table; non-zero when the config or the database cannot be read."""
    ns = _parser().parse_args(argv)
    try:
        config, _ = load_config(ns.config)
        since = time.time() - parse_duration(ns.since)
        rows = read_spend(config, Path(ns.config), since, ns.by)
    except (ConfigError, ValueError, SpendUnreadable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    names = key_names(config) if ns.by == "key" else {}
    if ns.json:
        print(orjson.dumps(spend_json(rows or [], ns.by, names)).decode())
    elif rows is None:
        print("no calls recorded yet: the telemetry database does not exist")
    else:
        print(render_spend(rows, ns.by, names))
    return 0


def read_spend(
    config: LanewayConfig, config_path: Path, since: float, by: str
) -> list[SpendRow] | None:
    """Spend rows since ``since`` (Unix seconds); ``None`` when no database exists yet."""
    store = store_for_url(config.telemetry.url, config_path.parent)
    if store is None:
        raise SpendUnreadable("telemetry is off (telemetry.url: none)")
    if isinstance(store, SqliteTelemetryStore) and not store.path.exists():
        return None
    try:
        return asyncio.run(_query(store, since, by))
    except Exception as exc:
        raise SpendUnreadable(f"cannot read telemetry: {exc}") from exc


def key_names(config: LanewayConfig) -> dict[str, str]:
    """Stored caller hashes back to the configured key names."""
    return {caller_hash(k.name): k.name for k in config.server.keys}


def spend_json(rows: Sequence[SpendRow], by: str, names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The rows as JSON objects: the group under ``by``, unknown figures as ``null``."""
    out = []
    for row in sorted(rows, key=lambda r: (r.group is None, r.group or "")):
        fields = dataclasses.asdict(row)
        group = fields.pop("group")
        out.append({by: None if group is None else names.get(group, group), **fields})
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="laneway spend", description=summary(__doc__))
    parser.add_argument("--config", default="laneway.yaml")
    parser.add_argument(
        "--since", default="24h", help="how far back, e.g. 30m, 12h, 1d, 7d (default 24h)"
    )
    parser.add_argument("--by", default="lane", choices=["lane", "source", "model", "key"])
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON array")
    return parser


async def _query(store: TelemetryStore, since: float, by: str) -> list[SpendRow]:
    await store.open()
    try:
        return await store.query_spend(since, by)
    finally:
        await store.close()


def render_spend(rows: Sequence[SpendRow], by: str, names: Mapping[str, str]) -> str:
    """The table, one line per group (``names`` turns caller hashes back into key names)."""
    if not rows:
        return "no calls in that period"
    ordered = sorted(rows, key=lambda r: (r.group is None, r.group or ""))
    table = [[by, *HEADER]] + [[_group(r.group, names), *_cells(r)] for r in ordered]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join(_line(row, widths) for row in table)


def _line(row: list[str], widths: list[int]) -> str:
    """The group left-aligned, the figures right-aligned."""
    figures = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
    return "  ".join([row[0].ljust(widths[0]), *figures]).rstrip()


def _group(group: str | None, names: Mapping[str, str]) -> str:
    if group is None:
        return "-"
    return names.get(group, group)


def _cells(row: SpendRow) -> list[str]:
    return [
        str(row.calls),
        str(row.errors),
        _tokens(row.prompt_tokens),
        _tokens(row.completion_tokens),
        _tokens(row.reasoning_tokens),
        render_cost(row),
        str(row.unpriced),
        str(row.usage_unknown),
        str(row.estimated),
        "-" if row.estimated_cost_usd is None else f"~{_usd(row.estimated_cost_usd)}",
    ]


def _tokens(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def render_cost(row: SpendRow) -> str:
    """Priced calls' cost; a floor when other calls' cost is unknown; never a bare $0."""
    if row.priced == 0 or row.cost_usd is None:
        return "unpriced" if row.unpriced else "n/a"
    floor = ">=" if row.priced < row.calls else ""
    return f"{floor}{_usd(row.cost_usd)}"


def _usd(value: float) -> str:
    """Dollars to the micro-dollar; a positive cost below that never prints as $0."""
    if 0 < value < 0.000_001:
        return "<$0.000001"
    return f"${value:.6f}"
