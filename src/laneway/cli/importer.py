"""``laneway import litellm CONFIG``: a LiteLLM proxy config as an equivalent laneway.yaml.

The output is validated as a laneway config before it is written. One header
block says what every lane shares (what LiteLLM would have done and what
laneway does instead) and what the proxy-wide settings became; a lane carries
a comment only where it differs; keys with no equivalent are listed at the top.
With ``--database URL`` it also reads LiteLLM's proxy database and writes its
keys and teams into the key store the output names (``server.key_store``:
``--key-store``, by default a SQLite file beside the output), so callers keep
their ``sk-...`` keys (``laneway.cli.import_keys``). Exit status: 0 when the
translation is complete, 1 when something has no equivalent (listed), 2 when
an input cannot be read, the store cannot be written or the output would not load.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from textwrap import wrap
from typing import Any

import yaml

from laneway.config.load import parse_config
from laneway.core.errors import ConfigError
from laneway.migrate.litellm import Translation, translate
from laneway.migrate.litellm.key_models import catalog
from laneway.migrate.litellm.keys import KeysTranslation, translate_keys

INCOMPLETE = 1
UNREADABLE = 2


def parser() -> argparse.ArgumentParser:
    """``laneway import``'s arguments (a new option is one more ``add_argument`` here)."""
    found = argparse.ArgumentParser(
        prog="laneway import", description="translate another gateway's config to laneway.yaml"
    )
    found.add_argument("source", choices=["litellm"], help="the config's gateway")
    found.add_argument("config", help="the LiteLLM proxy config (YAML)")
    found.add_argument("-o", "--output", help="write laneway.yaml here (default: stdout)")
    found.add_argument(
        "--database",
        metavar="URL",
        help="LiteLLM's proxy database (postgresql://...; ?schema=NAME): import its keys and teams",
    )
    found.add_argument(
        "--key-store",
        metavar="URL",
        help="the key store to import them into (default: laneway-keys.sqlite3 beside the output)",
    )
    found.add_argument(
        "--dry-run",
        action="store_true",
        help="with --database: read and report, write neither the key store nor --output",
    )
    return found


def main(argv: Sequence[str]) -> int:
    """Run ``laneway import``; returns the exit status."""
    found = parser()
    args = found.parse_args(argv)
    if (args.key_store or args.dry_run) and not args.database:
        found.error("--key-store and --dry-run need --database (the LiteLLM database to read)")
    try:
        data = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        print(f"error: {args.config}: cannot read: {exc}", file=sys.stderr)
        return UNREADABLE
    if not isinstance(data, dict):
        print(f"error: {args.config}: not a LiteLLM config (a mapping)", file=sys.stderr)
        return UNREADABLE
    translation = translate(data)
    keys = None
    if args.database:
        from laneway.cli import import_keys

        try:
            keys = _keys(args, data, translation)
        except import_keys.ImportFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return UNREADABLE
    text = render_translation(translation, args.config, keys)
    try:
        parse_config(text, origin="(imported)", environ=translation.placeholders)
    except ConfigError as exc:
        print(f"error: the translation does not load: {exc}", file=sys.stderr)
        return UNREADABLE
    if keys is not None and not args.dry_run:
        try:
            for line in _store(args, translation, keys):
                print(line, file=sys.stderr)
        except import_keys.ImportFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return UNREADABLE
    _output(args, text, keys)
    return _report(translation, keys)


def _output(args: argparse.Namespace, text: str, keys: KeysTranslation | None) -> None:
    """The config to ``--output`` (unless a dry run) or stdout."""
    if keys is not None and args.dry_run:
        found = f"{len(keys.keys)} key(s) and {len(keys.teams)} team(s)"
        print(f"dry run: {found} read; nothing written", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(text)
    elif not args.dry_run:
        Path(args.output).write_text(text, encoding="utf-8")


def _report(translation: Translation, keys: KeysTranslation | None) -> int:
    """Every gap and change on stderr; the exit status (1 when something was not carried)."""
    for gap in translation.gaps:
        print(f"not carried: {gap}", file=sys.stderr)
    status = "complete" if translation.complete else f"{len(translation.gaps)} key(s) not carried"
    print(f"imported {len(translation.config['lanes'])} lane(s): {status}", file=sys.stderr)
    if keys is None:
        return 0 if translation.complete else INCOMPLETE
    for line in keys.lines(keys.changes):
        print(f"carried differently: {line}", file=sys.stderr)
    gaps = keys.lines(keys.gaps)
    for line in gaps:
        print(f"not carried: {line}", file=sys.stderr)
    status = "complete" if not gaps else f"{len(gaps)} item(s) not carried"
    print(f"imported {len(keys.keys)} LiteLLM key(s): {status}", file=sys.stderr)
    return 0 if translation.complete and not gaps else INCOMPLETE


def _keys(
    args: argparse.Namespace, data: dict[str, Any], translation: Translation
) -> KeysTranslation:
    """LiteLLM's keys and teams, read and translated; ``server.key_store`` set to their store."""
    from laneway.cli.import_keys import read_rows, store_setting
    from laneway.state.keys.records import PERIODS

    rows = asyncio.run(read_rows(args.database))
    lite = data.get("litellm_settings")
    settings = lite if isinstance(lite, dict) else {}
    made = translate_keys(rows, catalog(translation.config, data), PERIODS, time.time(), settings)
    base = Path(args.output).parent if args.output else None
    setting, placeholders = store_setting(_store_url(args), base)
    translation.config.setdefault("server", {})["key_store"] = setting
    translation.placeholders.update(placeholders)
    return made


def _store_url(args: argparse.Namespace) -> str:
    from laneway.state.keys.databases import DEFAULT_PATH

    return str(args.key_store or DEFAULT_PATH)


def _store(args: argparse.Namespace, translation: Translation, keys: KeysTranslation) -> list[str]:
    """Write the keys into their store; the lines saying what was written where."""
    from laneway.cli.import_keys import shown, write_store

    base = Path(args.output).parent if args.output else Path.cwd()
    reserved = [k["name"] for k in translation.config.get("server", {}).get("keys", [])]
    url = _store_url(args)
    stored = asyncio.run(write_store(url, base, keys, reserved, time.time()))
    renamed = [f"carried differently: key {r}: its name is taken" for r in stored.renamed]
    where = f"imported {stored.keys} key(s) and {stored.teams} team(s) into {shown(url)}"
    return [*renamed, where]


def render_translation(
    translation: Translation, origin: str, keys: KeysTranslation | None = None
) -> str:
    """The laneway.yaml text: the header, then each section, each lane under its comment."""
    config = translation.config
    lines = [f"# laneway.yaml imported from {origin} by `laneway import litellm`."]
    if translation.header:
        lines.append("# What LiteLLM did and what laneway does instead:")
        lines += _comment(translation.header, "", "- ")
    if translation.gaps:
        lines.append("# Not carried (no laneway equivalent; the exit status was 1):")
        lines += _comment(translation.gaps, "", "  - ")
    if keys is not None:
        lines += _keys_header(keys)
    for key in ("server", "state", "telemetry", "cache", "aliases", "deployments"):
        if key in config:
            lines += ["", *_dump({key: config[key]})]
    lines += ["", "lanes:"]
    for name, lane in config["lanes"].items():
        lines += _comment(translation.notes.get(name, []), "  ", "- ")
        lines += ["  " + line for line in _dump({name: lane})]
    return "\n".join(lines) + "\n"


def _keys_header(keys: KeysTranslation) -> list[str]:
    lines = _comment(
        [
            f"Keys: {len(keys.keys)} key(s) and {len(keys.teams)} team(s) of LiteLLM's database "
            "are in the key store (server.key_store): a caller's sk-... key answers unchanged, "
            "with its limits and its spend so far"
        ],
        "",
    )
    if keys.changes:
        lines.append("# Keys carried differently:")
        lines += _comment(keys.lines(keys.changes), "", "  - ")
    if keys.gaps:
        lines.append("# Keys not carried (no laneway equivalent; the exit status was 1):")
        lines += _comment(keys.lines(keys.gaps), "", "  - ")
    return lines


def _dump(value: dict[str, Any]) -> list[str]:
    flow = None if "deployments" not in value else False
    text = yaml.safe_dump(value, sort_keys=False, default_flow_style=flow, width=100)
    return text.rstrip("\n").split("\n")


def _comment(items: list[str], indent: str, bullet: str = "") -> list[str]:
    out: list[str] = []
    for item in items:
        first, *rest = wrap(item, width=96 - len(indent)) or [""]
        out.append(f"{indent}# {bullet}{first}")
        out += [f"{indent}# {' ' * len(bullet)}{line}" for line in rest]
    return out
