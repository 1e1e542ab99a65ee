"""Reading a batch's input, and a checkpoint torn by a kill."""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.batch.items import parse_items, read_input
from laneway.batch.jobdir import CHECKPOINT, load_calls
from laneway.core.errors import RequestInvalid


def test_jsonl_takes_strings_and_objects_with_ids_or_line_numbers() -> None:
    raw = b'"plain"\n\n{"id": 7, "text": "seven"}\n{"input": "third"}\n'
    items = parse_items(raw, "jsonl", "embed", column=None, id_column=None)
    assert [(i.index, i.id, i.payload) for i in items] == [
        (0, "1", "plain"),
        (1, "7", "seven"),
        (2, "4", "third"),
    ]


def test_chat_jsonl_keeps_parameters_and_turns_a_prompt_into_a_message() -> None:
    raw = b'{"id": "a", "prompt": "hi", "temperature": 0}\n'
    (item,) = parse_items(raw, "jsonl", "chat", column=None, id_column=None)
    assert item.payload == {"temperature": 0, "messages": [{"role": "user", "content": "hi"}]}


def test_csv_reads_the_named_column_and_id_column(tmp_path: Path) -> None:
    path = tmp_path / "corpus.csv"
    path.write_text('key,body\nk1,"first, with a comma"\nk2,second\n')
    inputs = read_input(path, "embed", column="body", id_column="key")
    assert [(i.id, i.payload) for i in inputs.items] == [
        ("k1", "first, with a comma"),
        ("k2", "second"),
    ]
    other = read_input(path, "embed", column="key")
    assert other.digest != inputs.digest, "how the input was read is part of its identity"


@pytest.mark.parametrize(
    ("raw", "fmt", "message"),
    [
        (b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "jsonl", "'a' appears twice"),
        (b'{"text": "x", "extra": 1}\n', "jsonl", "line 1: an embed item needs"),
        (b"{not json\n", "jsonl", "line 1: not JSON"),
        (b"\n\n", "text", "holds no items"),
        (b"a,b\n1,2\n", "csv", "name the CSV column"),
    ],
)
def test_bad_input_is_refused_naming_the_line_or_field(raw: bytes, fmt: str, message: str) -> None:
    with pytest.raises(RequestInvalid, match=message):
        parse_items(raw, fmt, "embed", column=None, id_column=None)  # type: ignore[arg-type]


def test_a_line_torn_by_a_kill_is_cut_off_when_the_job_reopens(tmp_path: Path) -> None:
    path = tmp_path / CHECKPOINT
    whole = b'{"call": 0, "rows": [], "failures": []}\n'
    path.write_bytes(whole + b'{"call": 1, "rows": [[5, {"id"')
    calls = load_calls(path)
    assert list(calls) == [0]
    assert path.read_bytes() == whole
