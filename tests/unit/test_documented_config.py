"""Every config form README.md and docs/*.md show loads: whole files and inline snippets.

Before, the README's ``telemetry: none`` was refused ("Input should be a valid
dictionary"); this test reads the docs themselves, so a form they add later is
loaded too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from laneway.config import parse_config
from laneway.config.models import ChatLaneConfig, LanewayConfig
from laneway.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```ya?ml\n(.*?)^```", re.DOTALL | re.MULTILINE)
_SPAN = re.compile(r"`([a-z_]+): ([^`]+)`")
_PLACEHOLDERS = {
    "redis://...": "redis://127.0.0.1:6379/0",
    "postgresql://...": "postgresql://127.0.0.1:5432/test",
}
_BASE = {
    "lanes": {
        name: {"kind": kind, "sources": [{"base_url": "http://127.0.0.1:1/v1", "model": "m"}]}
        for name, kind in (("engram-summarize", "chat"), ("engram-embed", "embed"))
    }
}


def _files() -> list[tuple[str, str]]:
    """Each fenced YAML block that is a whole config (a top-level ``lanes:``)."""
    return [
        (doc.name, block)
        for doc in DOCS
        for block in _FENCE.findall(doc.read_text(encoding="utf-8"))
        if re.search(r"^lanes:", block, re.MULTILINE)
    ]


def _spans() -> list[tuple[str, str, str]]:
    """Each inline ``key: value`` of a top-level section, with a complete value.

    Lane settings shown inline are read in their table's context (``retries: 2``
    beside its ``retry_on``); the sections stand alone.
    """
    found = set()
    keys = set(LanewayConfig.model_fields) - {"lanes"}
    for doc in DOCS:
        for key, value in _SPAN.findall(doc.read_text(encoding="utf-8")):
            if key in keys and not re.search(r"\{[a-z_]+\}", value):
                found.add((doc.name, key, value))
    return sorted(found)


def _filled(text: str) -> str:
    for placeholder, value in _PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    return text


def test_the_docs_show_config_forms() -> None:
    assert len(_files()) >= 3
    assert ("README.md", "telemetry", "none") in _spans()


@pytest.mark.parametrize(("doc", "block"), _files())
def test_each_documented_config_file_loads(doc: str, block: str) -> None:
    parse_config(_filled(block), origin=doc)


@pytest.mark.parametrize(("doc", "key", "value"), _spans())
def test_each_documented_snippet_loads(doc: str, key: str, value: str) -> None:
    snippet = yaml.safe_load(_filled(f"{key}: {value}"))
    tries = []
    if key in LanewayConfig.model_fields:
        tries.append({**_BASE, **snippet})
    if key in ChatLaneConfig.model_fields:
        lane = {**_BASE["lanes"]["engram-summarize"], **snippet}
        tries.append({"lanes": {**_BASE["lanes"], "engram-summarize": lane}})
    errors = []
    for data in tries:
        try:
            parse_config(yaml.safe_dump(data), origin=doc)
        except ConfigError as exc:
            errors.append(str(exc))
        else:
            return
    pytest.fail(f"{doc}: `{key}: {value}` does not load:\n" + "\n".join(errors))
