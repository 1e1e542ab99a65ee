"""Network reads framed into blocks of whole lines (``laneway.http.sse``): no event is split."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from laneway.core.errors import AttemptFailure
from laneway.http.sse import MAX_LINE, LineBlocks, lines_of


def test_a_read_of_whole_lines_is_one_block_as_it_came() -> None:
    read = b"data: {}\n\ndata: {}\n\n"
    assert LineBlocks().feed(read) is read


def test_a_line_split_across_reads_waits_for_its_end() -> None:
    framing = LineBlocks()
    assert framing.feed(b'data: {"a"') == b""
    assert framing.feed(b':1}\n\ndata: {"b"') == b'data: {"a":1}\n\n'
    assert framing.feed(b":2}\r\n\r\n") == b'data: {"b":2}\r\n\r\n'
    assert framing.rest() == b""


def test_a_last_line_without_an_ending_comes_alone_at_the_end() -> None:
    framing = LineBlocks()
    assert framing.feed(b"data: 1\ndata: 2") == b"data: 1\n"
    assert framing.rest() == b"data: 2"


def test_a_line_without_an_ending_in_sight_breaks_the_stream() -> None:
    framing = LineBlocks()
    with pytest.raises(AttemptFailure, match="a line over"):
        framing.feed(b"x" * (MAX_LINE + 1))


async def test_lines_come_without_their_endings() -> None:
    async def blocks() -> AsyncIterator[bytes]:
        yield b"a\r\nb\n"
        yield b"c"

    assert [line async for line in lines_of(blocks())] == [b"a", b"b", b"c"]
