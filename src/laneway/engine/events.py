"""One upstream answer's server-sent events, read off the transport's blocks as asked for.

The transport hands a streamed body one network read at a time, cut at line
endings (``HttpStream.blocks``). ``UpstreamEvents`` parses the ``data:``
lines of a block one event at a time through the source's ``EventParser``
and keeps what the answer delivered (``AnswerProgress``): text, reasoning, whether
its final chunk came, its usage. Malformed events are skipped and counted;
``[DONE]`` ends the answer, and so does the usage chunk once the final chunk
came (a missing ``[DONE]`` then holds nobody).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from laneway.core.transport import HttpStream
from laneway.core.types import ChatChunk, Usage
from laneway.providers.base import EventParser


@dataclass(slots=True)
class AnswerProgress:
    """What one upstream answer has delivered so far (forwarded or not)."""

    malformed: int = 0
    finished: bool = False
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    usage: Usage | None = None


class UpstreamEvents:
    """The parsed events of one upstream answer, one ``next`` at a time."""

    __slots__ = ("_blocks", "_ended", "_lines", "_parser", "progress")

    def __init__(self, http: HttpStream, parser: EventParser, progress: AnswerProgress) -> None:
        self._blocks: AsyncGenerator[bytes, None] = http.blocks()
        self._parser = parser
        self._lines: list[bytes] = []
        """The current block's lines not read yet, last first."""
        self._ended = False
        self.progress = progress

    async def next(self) -> ChatChunk | None:
        """The next event's chunk; ``None`` once the answer ended (or its body did)."""
        while True:
            lines = self._lines
            while lines:
                chunk = self._take(lines.pop())
                if chunk is not None:
                    return chunk
            if self._ended:
                return None
            block = await anext(self._blocks, None)
            if block is None:
                self._ended = True
                return None
            lines[:] = block.split(b"\n")
            lines.reverse()

    def _take(self, line: bytes) -> ChatChunk | None:
        """One line's event, noted in ``progress``; ``None`` for a line that is no event."""
        if self._ended or not line.startswith(b"data:"):
            return None
        progress = self.progress
        try:
            chunk = self._parser.parse_event(line[5:].strip())
        except ValueError:
            progress.malformed += 1
            return None
        if chunk is None:
            self._end()
            return None
        if chunk.content:
            progress.content.append(chunk.content)
        if chunk.reasoning_content:
            progress.reasoning.append(chunk.reasoning_content)
        if chunk.finish_reason is not None:
            progress.finished = True
        if chunk.usage is not None:
            progress.usage = chunk.usage
            if progress.finished:
                self._end()
        return chunk

    def _end(self) -> None:
        self._ended = True
        self._lines.clear()

    async def aclose(self) -> None:
        """Stop reading: the transport's block iterator is closed."""
        await self._blocks.aclose()
