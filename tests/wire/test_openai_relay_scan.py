"""Which leading events of a read an OpenAI stream's relay passes on unread (``plain_prefix``)."""

from __future__ import annotations

import pytest

from laneway.wire.openai.relay import plain_prefix

WORD = b'data: {"id":"a","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
SPACED = (
    b'data: {"id": "a", "choices": [{"delta": {"content": "hi"}, "finish_reason": null}],'
    b' "usage": null}\n\n'
)
FINAL = b'data: {"id":"a","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
USAGE = b'data: {"id":"a","choices":[],"usage":{"prompt_tokens":1}}\n\n'
DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize("block", [WORD, WORD * 3, SPACED + WORD])
def test_a_read_of_plain_events_goes_on_whole(block: bytes) -> None:
    assert plain_prefix(block) == len(block)


@pytest.mark.parametrize(
    "tail",
    [
        FINAL + USAGE + DONE,
        USAGE,
        b'data: {"error": {"message": "overloaded"}}\n\n',
        b'data: {"id":"a","choices":[{"delta":{},"finish_reason" : "length"}]}\n\n',
    ],
    ids=["final", "usage", "error", "spaced finish"],
)
def test_plain_events_go_on_up_to_the_first_that_must_be_read(tail: bytes) -> None:
    assert plain_prefix(WORD * 2 + tail) == len(WORD) * 2
    assert plain_prefix(tail) == 0


@pytest.mark.parametrize(
    "block",
    [
        WORD + b"data: {not json\n\n",
        WORD + b": keep-alive\n\n" + WORD,
        WORD + DONE,
        WORD.replace(b"\n", b"\r\n"),
        WORD + b"data: {}\ndata: {}\n\n",
        b"data:" + WORD[6:],
    ],
    ids=["malformed", "comment", "done", "crlf", "two data lines", "no space"],
)
def test_a_read_that_is_not_only_plain_events_is_parsed_whole(block: bytes) -> None:
    assert plain_prefix(block) == 0
