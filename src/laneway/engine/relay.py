"""A segment's events for a caller of the source's own wire format: a network read in one send.

When the caller speaks the source's wire format (``/v1/chat/completions`` on
an OpenAI-compatible source) its events need no translating. Each network
read's whole lines go on as they came, in one piece (one ASGI send), when the
source's wire test (``Provider.relay_scan``) finds nothing in them that must
be read now; a read with something to read (the final chunk, usage, an
error, ``[DONE]``, a malformed event) is parsed event by event and written
by the caller's encoder, as every other stream is. The opening, up to the
first token, is always parsed: it decides whether the attempt succeeded.

Every promise of the parsing path holds. The idle timeout and the deadline
bound the wait for each event (a read that holds no event does not restart
the idle clock); a stream that stops before its final chunk is ``Broken``;
usage, the finish reason and errors are read where they come; the relayed
text stays bytes (``RawEvents``) until a cut, an estimate or a question
about tool-call deltas asks for it. Streams that are spliced (a restarted
answer) go chunk by chunk: their opening must be compared and cut.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.types import ChatChunk
from laneway.engine.read_watch import ReadWatch
from laneway.engine.segment import Broken

if TYPE_CHECKING:
    from laneway.engine.segment import Segment
    from laneway.engine.stream_facts import SentAnswer

T_co = TypeVar("T_co", covariant=True)
Encode = Callable[[ChatChunk], bytes]
"""Writes one parsed chunk in the caller's wire format (``b""``: nothing to send for it)."""


async def relayed(
    segment: Segment, scan: Callable[[bytes], int], encode: Encode, sent: SentAnswer
) -> AsyncGenerator[bytes, None]:
    """The segment's answer as the bytes to send, a network read at a time; ``Broken`` at a cut.

    Each wait for a read that holds an event is bounded by the segment's
    wait limit (idle, deadline, final grace), watched by one timer across
    the reads (``ReadWatch``); no wait spans the caller's send.
    """
    events = segment.opened.events
    opening = [encode(sent.took(chunk)) for chunk in segment.opened.buffered]
    rest = events.unread()
    if rest:
        opening.append(_piece(segment, scan, encode, sent, rest) or b"")
    yield b"".join(opening)
    watch = ReadWatch(segment.clock)
    try:
        while (piece := await _next_piece(segment, scan, encode, sent, watch)) is not None:
            yield piece
    finally:
        watch.close()
    if not events.progress.finished:
        raise Broken(AttemptFailure(FailureKind.CUT, "stream ended without its final chunk"))


async def _next_piece(
    segment: Segment,
    scan: Callable[[bytes], int],
    encode: Encode,
    sent: SentAnswer,
    watch: ReadWatch,
) -> bytes | None:
    """The next read that holds an event, as bytes to send; ``None`` once the answer ended.

    A read cut at its limit (or broken) after the final chunk ends the
    answer; before it, the segment is ``Broken``.
    """
    events, now = segment.opened.events, segment.clock.now()
    watch.begin(now + segment.wait_limit(now))
    piece = None
    cause: BaseException | None = None
    try:
        while piece is None and (block := await events.read_block()) is not None:
            piece = _piece(segment, scan, encode, sent, block)
    except asyncio.CancelledError:
        if not watch.end():
            raise
        cause = TimeoutError()
    except AttemptFailure as failure:
        watch.end()
        cause = failure
    else:
        watch.end()
    if cause is None or events.progress.finished:
        return piece
    raise Broken(segment.why_broken(cause)) from None


def _piece(
    segment: Segment, scan: Callable[[bytes], int], encode: Encode, sent: SentAnswer, block: bytes
) -> bytes | None:
    """What to send for one read: its plain events as they came, the rest parsed and written.

    ``None`` when the read holds no event (``b""``: events with nothing to send).
    """
    events = segment.opened.events
    plain = scan(block)
    if plain == len(block):
        sent.relayed(events.relayed(block))
        return block
    pieces: list[bytes] = []
    if plain:
        head = block[:plain]
        sent.relayed(events.relayed(head))
        pieces.append(head)
    chunks = events.parse(block[plain:] if plain else block)
    pieces += [encode(sent.took(chunk)) for chunk in chunks]
    return b"".join(pieces) if pieces else None


class StreamOutput(Protocol[T_co]):
    """What a stream gives its reader: each parsed chunk as ``T``, or a segment's own pieces."""

    def chunk(self, chunk: ChatChunk) -> T_co:
        """One parsed chunk for the reader."""
        ...

    def segment(self, segment: Segment, sent: SentAnswer) -> AsyncGenerator[T_co, None] | None:
        """The segment's pieces when it is relayed, else ``None`` (chunk by chunk)."""
        ...


class ChunkOutput:
    """The library's reader: parsed chunks, every segment chunk by chunk."""

    def chunk(self, chunk: ChatChunk) -> ChatChunk:
        """The chunk itself."""
        return chunk

    def segment(self, segment: Segment, sent: SentAnswer) -> None:
        """Nothing is relayed to a library caller."""
        return


CHUNKS = ChunkOutput()


class RelayOutput:
    """A caller over the wire: bytes to send, written by ``encode`` or relayed as they came.

    ``wire`` names the caller's wire format when its encoder writes each event
    as the source sent it (``None``: every event is written by ``encode``). A
    segment is relayed when its source offers a test for that wire and it is
    the answer's first (a continuation's chunks carry the first answer's id,
    and a restarted one's opening is spliced).
    """

    __slots__ = ("_encode", "_wire")

    def __init__(self, encode: Encode, wire: str | None) -> None:
        self._encode = encode
        self._wire = wire

    def chunk(self, chunk: ChatChunk) -> bytes:
        """The chunk in the caller's format."""
        return self._encode(chunk)

    def segment(self, segment: Segment, sent: SentAnswer) -> AsyncGenerator[bytes, None] | None:
        """The segment relayed a network read at a time, when its source and place allow."""
        if self._wire is None or segment.continuation:
            return None
        scan = segment.source.provider.relay_scan(self._wire)
        if scan is None:
            return None
        return relayed(segment, scan, self._encode, sent)
