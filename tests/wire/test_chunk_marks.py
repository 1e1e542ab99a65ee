"""A stream event's marks read from its bytes agree with what parsing it finds."""

from __future__ import annotations

import orjson
import pytest

from laneway.core.errors import AttemptFailure
from laneway.wire.openai.chat_answer import chunk_marks, read_completion_chunk


def event(delta: dict[str, object], finish: str | None = None, **extra: object) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return orjson.dumps(
        {"id": "c", "object": "chat.completion.chunk", "choices": [choice], **extra}
    )


def test_a_content_delta_is_plain_even_when_its_text_quotes_the_keys() -> None:
    text = '{"usage": {"prompt_tokens": 1}, "finish_reason": "stop", "error": 1}'
    data = event({"content": text})
    assert chunk_marks(data).plain
    chunk = read_completion_chunk(data)
    assert chunk is not None and chunk.content == text and chunk.usage is None


@pytest.mark.parametrize(
    ("data", "mark"),
    [
        (b"[DONE]", "done"),
        (b" [DONE] ", "done"),
        (event({}, "stop"), "finish"),
        (event({}, usage={"prompt_tokens": 3, "completion_tokens": 1}), "usage"),
        (b'{"error": {"message": "overloaded"}}', "error"),
    ],
)
def test_each_mark_is_found_in_the_bytes(data: bytes, mark: str) -> None:
    marks = chunk_marks(data)
    assert getattr(marks, mark) and not marks.plain


def test_a_null_usage_and_a_null_finish_mark_nothing() -> None:
    assert chunk_marks(event({"content": "x"}, usage=None)).plain


def test_what_is_marked_is_what_the_parse_reads() -> None:
    with_usage = event({}, usage={"prompt_tokens": 3, "completion_tokens": 1})
    chunk = read_completion_chunk(with_usage)
    assert chunk is not None and chunk.usage is not None and chunk.usage.prompt_tokens == 3
    with pytest.raises(AttemptFailure):
        read_completion_chunk(b'{"error": {"message": "overloaded"}}')
