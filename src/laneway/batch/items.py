"""A batch's input: JSONL, CSV or plain text lines, read into numbered items.

Every item gets an ``id``: the line's own ``id`` field (JSONL), the id
column (CSV), or its 1-based line number. Ids must be unique, since they are
how a result is matched to its input. The input's SHA-256 (with the way it
was read) is recorded in a job's manifest, so a job is never resumed over a
changed input.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from laneway.core.errors import RequestInvalid

InputFormat = Literal["jsonl", "csv", "text"]
TEXT_KEYS = ("text", "input")
"""Keys of a JSONL object that hold the text of an embed item."""


@dataclass(frozen=True, slots=True)
class Item:
    """One unit of work: its position in the input, its id, and what to send.

    ``payload`` is the text (embed lanes) or an OpenAI-shaped chat request
    (``messages`` plus parameters) on chat lanes.
    """

    index: int
    id: str
    payload: str | dict[str, Any]


@dataclass(frozen=True, slots=True)
class InputSet:
    """The items of one input and the digest that identifies it."""

    items: list[Item]
    digest: str


def items_of(values: Iterable[Any], kind: str) -> InputSet:
    """Items from Python values, as if each were a JSONL line (a string or an object)."""
    values = list(values)
    items = [item_of(n, value, kind) for n, value in enumerate(values, 1)]
    numbered = number(items)
    digest = hashlib.sha256(b"values\0" + orjson.dumps(values)).hexdigest()
    return InputSet(numbered, digest)


def format_of(path: Path, given: str | None) -> InputFormat:
    """The input format: as given, else from the file's suffix (anything else is text)."""
    name = given or {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}.get(
        path.suffix.lower(), "text"
    )
    if name not in ("jsonl", "csv", "text"):
        raise RequestInvalid("input-format", f"{name!r} is not one of jsonl, csv, text")
    return name  # type: ignore[return-value]


def read_input(
    path: Path,
    kind: str,
    *,
    fmt: str | None = None,
    column: str | None = None,
    id_column: str | None = None,
) -> InputSet:
    """Read ``path`` as items for a ``kind`` lane (``embed`` or ``chat``)."""
    raw = path.read_bytes()
    name = format_of(path, fmt)
    items = parse_items(raw, name, kind, column=column, id_column=id_column)
    how = orjson.dumps([name, column, id_column])
    digest = hashlib.sha256(how + b"\0" + raw).hexdigest()
    return InputSet(items, digest)


def parse_items(
    raw: bytes, fmt: InputFormat, kind: str, *, column: str | None, id_column: str | None
) -> list[Item]:
    """The items of an input's bytes; errors name the line and the field."""
    text = raw.decode("utf-8-sig")
    if fmt == "csv":
        items = _csv_items(text, kind, column, id_column)
    elif fmt == "jsonl":
        items = [_json_item(n, line, kind) for n, line in _lines(text)]
    else:
        items = [_text_item(n, line, kind) for n, line in _lines(text)]
    return number(items)


def number(items: Sequence[Item]) -> list[Item]:
    """``items`` with their positions; refused when empty or when an id repeats."""
    numbered = [Item(i, item.id, item.payload) for i, item in enumerate(items)]
    if not numbered:
        raise RequestInvalid("input", "holds no items")
    check_unique(numbered)
    return numbered


def _lines(text: str) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers."""
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _text_item(number: int, line: str, kind: str) -> Item:
    return Item(0, str(number), line if kind == "embed" else prompt_request(line))


def _json_item(number: int, line: str, kind: str) -> Item:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise RequestInvalid(f"line {number}", f"not JSON: {exc}") from exc
    return item_of(number, value, kind)


def item_of(number: int, value: Any, kind: str) -> Item:
    """The item a JSONL line (or a library caller's value) describes; ``number`` is 1-based."""
    if isinstance(value, str):
        return _text_item(number, value, kind)
    if not isinstance(value, dict):
        raise RequestInvalid(f"line {number}", "must be a string or an object")
    value = dict(value)
    item_id = value.pop("id", number)
    if not isinstance(item_id, str | int) or isinstance(item_id, bool):
        raise RequestInvalid(f"line {number}.id", "must be a string or an integer")
    payload = _embed_text(number, value) if kind == "embed" else _chat_payload(number, value)
    return Item(0, str(item_id), payload)


def _embed_text(number: int, value: dict[str, Any]) -> str:
    keys = [key for key in TEXT_KEYS if key in value]
    extra = sorted(set(value) - set(TEXT_KEYS))
    if len(keys) != 1 or extra:
        wanted = "exactly one of 'text', 'input' (and an optional 'id')"
        raise RequestInvalid(f"line {number}", f"an embed item needs {wanted}")
    text = value[keys[0]]
    if not isinstance(text, str):
        raise RequestInvalid(f"line {number}.{keys[0]}", "must be a string")
    return text


def _chat_payload(number: int, value: dict[str, Any]) -> dict[str, Any]:
    if "prompt" in value:
        prompt = value.pop("prompt")
        if "messages" in value or not isinstance(prompt, str):
            raise RequestInvalid(f"line {number}.prompt", "must be a string, without 'messages'")
        value["messages"] = [{"role": "user", "content": prompt}]
    messages = value.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestInvalid(f"line {number}.messages", "must be a non-empty list")
    return value


def prompt_request(prompt: str) -> dict[str, Any]:
    """A chat request of one user message."""
    return {"messages": [{"role": "user", "content": prompt}]}


def _csv_items(text: str, kind: str, column: str | None, id_column: str | None) -> list[Item]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = reader.fieldnames or []
    if column is None:
        raise RequestInvalid("column", f"name the CSV column to read ({', '.join(fields)})")
    for name in (column, id_column):
        if name is not None and name not in fields:
            raise RequestInvalid("column", f"{name!r} is not a column ({', '.join(fields)})")
    items = []
    for number, row in enumerate(reader, 2):
        value = row[column]
        item_id = row[id_column] if id_column is not None else str(number)
        items.append(Item(0, item_id, value if kind == "embed" else prompt_request(value)))
    return items


def check_unique(items: Sequence[Item]) -> None:
    """Refuse repeated ids: a result could not be told apart from its twin's."""
    seen: dict[str, int] = {}
    for item in items:
        if item.id in seen:
            first, again = seen[item.id] + 1, item.index + 1
            raise RequestInvalid("id", f"{item.id!r} appears twice (items {first} and {again})")
        seen[item.id] = item.index
