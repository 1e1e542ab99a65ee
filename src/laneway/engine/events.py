"""One upstream answer's server-sent events, read off the transport's blocks as asked for.

The transport hands a streamed body one network read at a time, cut at line
endings (``HttpStream.blocks``). ``UpstreamEvents`` parses the ``data:``
lines of a block one event at a time through the source's ``EventParser``
and keeps what the answer delivered (``AnswerProgress``): text, reasoning,
whether its final chunk came, its usage. Malformed events are skipped and
counted; ``[DONE]`` ends the answer, and so does the usage chunk once the
final chunk came (a missing ``[DONE]`` then holds nobody).

A relayed block (``laneway.engine.relay``) is not parsed: it is kept as it
came (``RawEvents``), and its text is read from it only when something asks
(a continuation's prefill, an estimate of what a broken answer used).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass, field

from laneway.core.transport import HttpStream
from laneway.core.types import ChatChunk, Usage
from laneway.providers.base import EventParser


class RawEvents:
    """A block of events passed on as they came, parsed only when something asks.

    A plain slotted class: one is made a relayed read, and a frozen
    dataclass's ``__init__`` costs twice a plain one's.
    """

    __slots__ = ("block", "parser")

    def __init__(self, block: bytes, parser: EventParser) -> None:
        self.block = block
        self.parser = parser

    def chunks(self) -> list[ChatChunk]:
        """The block's events (a stateless parser's, so reading them later reads the same)."""
        chunks: list[ChatChunk] = []
        for line in self.block.split(b"\n"):
            if line.startswith(b"data:"):
                try:
                    chunk = self.parser.parse_event(line[5:].strip())
                except ValueError:
                    continue
                if chunk is not None:
                    chunks.append(chunk)
        return chunks


Text = list[str | RawEvents]
"""Pieces of text in order: parsed pieces, and relayed blocks not read yet."""


def joined_text(pieces: Text, *, reasoning: bool = False) -> str:
    """The text (or the reasoning) of ``pieces``, each relayed block's chunks read for it."""
    texts: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            texts.append(piece)
            continue
        chunks = piece.chunks()
        texts.extend(c.reasoning_content if reasoning else c.content for c in chunks)
    return "".join(texts)


@dataclass(slots=True)
class AnswerProgress:
    """What one upstream answer has delivered so far (forwarded or not)."""

    malformed: int = 0
    finished: bool = False
    content: Text = field(default_factory=list)
    reasoning: Text = field(default_factory=list)
    usage: Usage | None = None

    def text(self) -> str:
        """The answer's text so far."""
        return joined_text(self.content)

    def reasoning_text(self) -> str:
        """The answer's reasoning so far."""
        return joined_text(self.reasoning, reasoning=True)


class UpstreamEvents:
    """The events of one upstream answer: parsed one ``next`` at a time, or a block at a time."""

    __slots__ = ("_block", "_blocks", "_ended", "_parser", "_read_to", "progress")

    def __init__(self, http: HttpStream, parser: EventParser, progress: AnswerProgress) -> None:
        self._blocks: AsyncGenerator[bytes, None] = http.blocks()
        self._parser = parser
        self._block = b""
        self._read_to = 0
        """How far ``next`` has read the current block: its lines are taken one at a time,
        not split whole (a relay sends the rest of the first block as it came)."""
        self._ended = False
        self.progress = progress

    async def next(self) -> ChatChunk | None:
        """The next event's chunk; ``None`` once the answer ended (or its body did)."""
        while True:
            block, start = self._block, self._read_to
            while start < len(block):
                end = block.find(b"\n", start)
                if end < 0:
                    end = len(block)
                self._read_to = end + 1
                chunk = self._take(block[start:end])
                if chunk is not None:
                    return chunk
                block, start = self._block, self._read_to
            read = await self.read_block()
            if read is None:
                return None
            self._block, self._read_to = read, 0

    async def read_block(self) -> bytes | None:
        """The next network read's whole lines, unread; ``None`` once the answer ended."""
        if self._ended:
            return None
        block = await anext(self._blocks, None)
        if block is None:
            self._ended = True
        return block

    def unread(self) -> bytes:
        """The rest of the current block (``next`` stopped inside it) as it came, from its
        next line that is not blank."""
        rest = self._block[self._read_to :]
        self._block, self._read_to = b"", 0
        return rest.lstrip(b"\r\n")

    def parse(self, block: bytes) -> list[ChatChunk]:
        """``block``'s events, parsed and noted, up to the answer's end."""
        return self._parsed(block.split(b"\n"))

    def relayed(self, block: bytes) -> RawEvents:
        """``block`` passed on unread: its text is noted as a piece to read when asked."""
        raw = RawEvents(block, self._parser)
        self.progress.content.append(raw)
        self.progress.reasoning.append(raw)
        return raw

    def _parsed(self, lines: Iterable[bytes]) -> list[ChatChunk]:
        chunks: list[ChatChunk] = []
        for line in lines:
            chunk = self._take(line)
            if chunk is not None:
                chunks.append(chunk)
        return chunks

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
        self._block, self._read_to = b"", 0

    async def aclose(self) -> None:
        """Stop reading: the transport's block iterator is closed."""
        await self._blocks.aclose()
