"""``laneway import litellm CONFIG``: a LiteLLM proxy config as an equivalent laneway.yaml.

The output is validated as a laneway config before it is written. One header
block says what every lane shares (what LiteLLM would have done and what
laneway does instead) and what the proxy-wide settings became; a lane carries
a comment only where it differs; keys with no equivalent are listed at the top. Exit status: 0 when
the translation is complete, 1 when some keys have no equivalent (listed),
2 when the input cannot be read or the output would not load.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from textwrap import wrap
from typing import Any

import yaml

from laneway.config.load import parse_config
from laneway.core.errors import ConfigError
from laneway.migrate.litellm import Translation, translate

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
    return found


def main(argv: Sequence[str]) -> int:
    """Run ``laneway import``; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        data = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        print(f"error: {args.config}: cannot read: {exc}", file=sys.stderr)
        return UNREADABLE
    if not isinstance(data, dict):
        print(f"error: {args.config}: not a LiteLLM config (a mapping)", file=sys.stderr)
        return UNREADABLE
    translation = translate(data)
    text = render_translation(translation, args.config)
    try:
        parse_config(text, origin="(imported)", environ=translation.placeholders)
    except ConfigError as exc:
        print(f"error: the translation does not load: {exc}", file=sys.stderr)
        return UNREADABLE
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for gap in translation.gaps:
        print(f"not carried: {gap}", file=sys.stderr)
    status = "complete" if translation.complete else f"{len(translation.gaps)} key(s) not carried"
    print(f"imported {len(translation.config['lanes'])} lane(s): {status}", file=sys.stderr)
    return 0 if translation.complete else INCOMPLETE


def render_translation(translation: Translation, origin: str) -> str:
    """The laneway.yaml text: the header, then each section, each lane under its comment."""
    config = translation.config
    lines = [f"# laneway.yaml imported from {origin} by `laneway import litellm`."]
    if translation.header:
        lines.append("# What LiteLLM did and what laneway does instead:")
        lines += _comment(translation.header, "", "- ")
    if translation.gaps:
        lines.append("# Not carried (no laneway equivalent; the exit status was 1):")
        lines += _comment(translation.gaps, "", "  - ")
    for key in ("server", "state", "telemetry", "cache", "aliases", "deployments"):
        if key in config:
            lines += ["", *_dump({key: config[key]})]
    lines += ["", "lanes:"]
    for name, lane in config["lanes"].items():
        lines += _comment(translation.notes.get(name, []), "  ", "- ")
        lines += ["  " + line for line in _dump({name: lane})]
    return "\n".join(lines) + "\n"


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
