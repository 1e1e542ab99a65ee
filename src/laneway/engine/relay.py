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
from collections.abc import Awaitable, Callable
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


class Relayed:
    """The segment's answer as the bytes to send, a network read at a time; ``Broken`` at a cut.

    An async iterator whose ``__anext__`` is the read itself (one frame a read:
    a generator and the coroutines under it were a step each). Each wait for
    a read that holds an event is bounded by the segment's wait limit (idle,
    deadline, final grace), watched by one timer across the reads
    (``ReadWatch``); no wait spans the caller's send.
    """

    __slots__ = ("_done", "_encode", "_opening", "_scan", "_segment", "_sent", "_watch")

    def __init__(
        self, segment: Segment, scan: Callable[[bytes], int], encode: Encode, sent: SentAnswer
    ) -> None:
        self._segment, self._scan, self._encode, self._sent = segment, scan, encode, sent
        self._watch = ReadWatch(segment.clock)
        self._opening = True
        self._done = False

    def __aiter__(self) -> Relayed:
        return self

    async def __anext__(self) -> bytes:
        segment = self._segment
        if self._opening:
            self._opening = False
            return self._opened()
        if self._done:
            raise StopAsyncIteration
        events, now = segment.opened.events, segment.clock.now()
        self._watch.begin(now + segment.wait_limit(now))
        piece = None
        try:
            while piece is None and (block := await events.read_block()) is not None:
                piece = _piece(segment, self._scan, self._encode, self._sent, block)
        except asyncio.CancelledError:
            if not self._watch.end():
                raise
            return self._ended(TimeoutError())
        except AttemptFailure as failure:
            self._watch.end()
            return self._ended(failure)
        self._watch.end()
        return self._ended(None) if piece is None else piece

    def _opened(self) -> bytes:
        """The opening: the chunks read up to the first token, and the rest of that read."""
        segment, sent, encode = self._segment, self._sent, self._encode
        opening = [encode(sent.took(chunk)) for chunk in segment.opened.buffered]
        rest = segment.opened.events.unread()
        if rest:
            opening.append(_piece(segment, self._scan, encode, sent, rest) or b"")
        return b"".join(opening)

    def _ended(self, cause: BaseException | None) -> bytes:
        """The answer ended (``cause``: how a read ended it): done if complete, else broken."""
        self._done = True
        self._watch.close()
        if self._segment.opened.progress.finished:
            raise StopAsyncIteration
        if cause is None:
            raise Broken(AttemptFailure(FailureKind.CUT, "stream ended without its final chunk"))
        raise Broken(self._segment.why_broken(cause)) from None

    async def aclose(self) -> None:
        """Stop reading: the watch's timer goes (the connection is the segment's)."""
        self._done = True
        self._watch.close()


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


class Pieces(Protocol[T_co]):
    """A segment's pieces for the reader, relayed: an async iterator that can be closed."""

    def __aiter__(self) -> Pieces[T_co]: ...

    def __anext__(self) -> Awaitable[T_co]: ...

    def aclose(self) -> Awaitable[None]: ...


class StreamOutput(Protocol[T_co]):
    """What a stream gives its reader: each parsed chunk as ``T``, or a segment's own pieces."""

    def chunk(self, chunk: ChatChunk) -> T_co:
        """One parsed chunk for the reader."""
        ...

    def segment(self, segment: Segment, sent: SentAnswer) -> Pieces[T_co] | None:
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

    def segment(self, segment: Segment, sent: SentAnswer) -> Relayed | None:
        """The segment relayed a network read at a time, when its source and place allow."""
        if self._wire is None or segment.continuation:
            return None
        scan = segment.source.provider.relay_scan(self._wire)
        if scan is None:
            return None
        return Relayed(segment, scan, self._encode, sent)
