"""A streamed body read as the network delivers it: each read becomes a block of whole lines.

Server-sent events arrive several to a network read, or one split across
two. Every transport's ``HttpStream.blocks()`` frames its reads here, so a
block ends at a line ending: the engine can relay a read's events in one
send and parse an event only when something needs it, and the redacting
transport scans whole lines (a secret never straddles two blocks). A line
that grows past ``MAX_LINE`` without an ending breaks the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind

MAX_LINE = 1024 * 1024
"""Bytes a streamed line may hold before the stream counts as broken (no newline in sight)."""


class LineBlocks:
    """Frames network reads into blocks of complete lines, line endings kept."""

    __slots__ = ("_rest",)

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> bytes:
        """The lines ``data`` completes (``b""`` when none ended); the rest waits for more."""
        if self._rest:
            data = self._rest + data
        end = data.rfind(b"\n") + 1
        if end == len(data):
            self._rest = b""
            return data
        self._rest = data[end:]
        if len(self._rest) > MAX_LINE:
            raise AttemptFailure(FailureKind.CUT, f"a line over {MAX_LINE} bytes")
        return data[:end]

    def rest(self) -> bytes:
        """What followed the last line ending when the body ended (a last line without one)."""
        rest, self._rest = self._rest, b""
        return rest


async def lines_of(blocks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The lines of ``blocks``, without their endings (``\\n`` or ``\\r\\n``)."""
    async for block in blocks:
        lines = block.split(b"\n")
        if not lines[-1]:
            lines.pop()
        for line in lines:
            yield line.rstrip(b"\r")
