"""Streaming chat on one lane: retried like any call until content flows, honest after.

Before the first content reaches the caller, a stream that fails (error
status, no first token within ``first_byte_timeout`` of sending the request,
cut, empty) is one failed attempt of the ordinary call loop. After content has
been forwarded, a cut, a stall past ``idle_timeout`` or the deadline ends the
stream with ``StreamInterrupted``, never as a clean success, unless the lane
continues the answer (``continue_on_cut``): on a source that
``accepts_prefill``, with the partial answer as an assistant prefill; or, with
``continue_on_cut: restart``, on any other source asked afresh, whose answer
is spliced only if it begins with exactly the text already sent.

A stream is complete once its final chunk (a ``finish_reason``) has arrived;
malformed events are skipped and counted, and a missing ``[DONE]`` after the
final chunk holds the caller for at most ``FINAL_USAGE_GRACE`` while the usage
chunk is awaited.

Each upstream answer (a segment) keeps its admission until it ends, then
settles its concurrency slot and quota with the tokens it really used: the
provider's figures, or, for an answer broken off before its usage chunk, an
estimate of what it consumed. A continued stream's usage is the sum of its
segments', and each segment's attempt carries its own usage so the call is
priced at each source's rate.

A ``LaneStream`` is one lane's part of a streamed call; ``ChatStream``
(``laneway.engine.chain_stream``) walks the lane's fallback chain with them.
What to do after a cut is ``laneway.engine.continuation``'s pure plan; each
upstream answer is a ``laneway.engine.segment.Segment``, which owns its
admission; events are read by ``laneway.engine.events``.
A lane may resume an answer an earlier lane of the chain began and broke off
(``Resume``): every source is then asked afresh and its answer spliced, as
under ``continue_on_cut: restart``, never continued from a prefill.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator
from contextlib import aclosing
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from laneway.core.errors import AttemptFailure, CallFailed, StreamInterrupted
from laneway.core.records import CallMeta
from laneway.core.types import NO_USAGE, Attempt, ChatChunk, ChatRequest, Usage
from laneway.engine.continuation import (
    ContinuationPlan,
    ContinuingSource,
    Resume,
)
from laneway.engine.relay import CHUNKS, Encode, RelayOutput, StreamOutput
from laneway.engine.segment import Broken, OpenedAnswer, Segment, ask_source, prefilled
from laneway.engine.stream_facts import SentAnswer, StreamAttempts
from laneway.policy.deadline import Deadline
from laneway.policy.quota import request_tokens

if TYPE_CHECKING:
    from laneway.engine.lane import Lane
    from laneway.engine.parts import CallParts

T = TypeVar("T")


class LaneStream:
    """One lane's streamed call: an async iterator of ``ChatChunk``; after it ends, its facts.

    ``source``, ``attempts``, ``usage``, ``content`` and ``malformed_events``
    are filled as the stream runs. With ``resume``, it continues an answer an
    earlier lane began (``content`` then starts with the text already sent).
    ``cost`` (with ``cost_unknown``) is the lane's part's, once it ended.
    """

    def __init__(
        self,
        parts: CallParts,
        lane: Lane,
        request: ChatRequest,
        deadline: Deadline,
        meta: CallMeta | None = None,
        resume: Resume | None = None,
    ) -> None:
        self._shared = parts
        self._resume = resume
        self._plan = ContinuationPlan(lane.config.continue_on_cut, resuming=resume is not None)
        self._meta = meta
        self._call = parts.recorder.start()
        self.lane = lane
        self._request = request
        self._deadline = deadline
        self.source: str | None = None
        self._attempts = StreamAttempts()
        self._sent = SentAnswer(resume)
        self.malformed_events = 0
        self.first_token_at: float | None = None
        self._started = parts.clock.now()
        self._chunks: AsyncGenerator[ChatChunk, None] | None = None
        self._pieces: AsyncGenerator[bytes, None] | None = None
        self.cost: Decimal | None = None
        self.cost_unknown: str | None = None

    @property
    def attempts(self) -> tuple[Attempt, ...]:
        """Every attempt so far; a continued stream's answers carry their own usage."""
        return self._attempts.all

    def priced_attempts(self) -> tuple[Attempt, ...]:
        """Every attempt, each answer carrying its own usage (for a call that other lanes'
        answers continued, priced part by part)."""
        return self._attempts.priced()

    @property
    def usage(self) -> Usage | None:
        """The stream's usage once it ended (``None`` before, or when unreported).

        One answer's usage is the provider's (estimated when the lane has
        ``estimate_missing_usage``, or when it was broken off before its usage
        chunk). A continued stream's is the sum over its answers: prompt and
        completion tokens of each request, ``estimated`` when any part is.
        """
        return self._attempts.usage

    @property
    def content(self) -> str:
        """The answer forwarded so far."""
        return self._sent.text

    @property
    def model(self) -> str | None:
        """The model the answer's chunks name."""
        return self._sent.model

    @property
    def elapsed(self) -> float:
        """Seconds since the call started."""
        return self._shared.clock.now() - self._started

    def __aiter__(self) -> AsyncGenerator[ChatChunk, None]:
        if self._chunks is None:
            self._chunks = self._run(CHUNKS)
        return self._chunks

    def relay(self, encode: Encode, wire: str | None) -> AsyncGenerator[bytes, None]:
        """The stream as the bytes to send a caller over the wire (``laneway.engine.relay``).

        Each chunk is written by ``encode``; a caller whose encoder writes the
        events of ``wire`` as they came is sent a relayed source's network
        reads as they came. Read it or iterate the stream, not both.
        """
        if self._pieces is None:
            self._pieces = self._run(RelayOutput(encode, wire))
        return self._pieces

    async def aclose(self) -> None:
        """Stop the stream and release its upstream connection at once."""
        for iterator in (self._chunks, self._pieces):
            if iterator is not None:
                await iterator.aclose()

    async def __aenter__(self) -> LaneStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self, out: StreamOutput[T]) -> AsyncGenerator[T, None]:
        """The answer, segment after segment, until one finishes or none can continue.

        One generator from the segments' pieces to the reader (each layer is a
        step of every read), recorded as one call.
        """
        recorder = self._shared.recorder
        failures = recorder.failures(self.lane, self._call, self._meta, self._facts)
        try:
            with failures:
                lane: Lane | None = self.lane
                continuation = self._resume is not None
                while lane is not None:
                    segment = await self._opened(lane, continuation)
                    broken: AttemptFailure | None = None
                    try:
                        relayed = out.segment(segment, self._sent)
                        if relayed is None:
                            async with aclosing(segment.chunks()) as chunks:
                                async for chunk in chunks:
                                    yield out.chunk(self._sent.took(chunk))
                        else:
                            async with aclosing(relayed) as pieces:
                                async for piece in pieces:
                                    yield piece
                    except Broken as exc:
                        broken = exc.failure
                    finally:
                        await self._ended(segment, broken)
                    lane, continuation = self._going_on(lane, broken), True
        finally:
            if failures.cost is not None:
                self.cost, self.cost_unknown = failures.cost
        priced = recorder.ok(self.lane, self._call, self._meta, status=200, **self._facts())
        self.cost, self.cost_unknown = priced

    def _facts(self) -> dict[str, Any]:
        ttfb = None if self.first_token_at is None else self.first_token_at - self._started
        facts: dict[str, Any] = {
            "attempts": self.attempts,
            "usage": self.usage or NO_USAGE,
            "ttfb": ttfb,
            "stream": True,
            "malformed_events": self.malformed_events,
        }
        if self.source is not None:
            facts["source"] = self.source
        if self.model is not None:
            facts["model"] = self.model
        return facts

    async def _opened(self, lane: Lane, continuation: bool) -> Segment:
        """The next segment; a continuation that cannot open interrupts the stream."""
        try:
            return await self._open(lane, continuation)
        except CallFailed as exc:
            if not continuation:
                raise
            raise self._interrupted("the continuation failed: " + str(exc)) from exc

    async def _ended(self, segment: Segment, broken: AttemptFailure | None) -> None:
        """A segment ended: its connection closed, its attempt settled."""
        self.malformed_events += segment.opened.progress.malformed
        await segment.opened.stack.aclose()
        await self._settle(segment, broken)

    def _going_on(self, lane: Lane, broken: AttemptFailure | None) -> Lane | None:
        """Where the answer goes on after a segment: nowhere once it finished; after a
        break, the sources that may continue it, or ``StreamInterrupted``."""
        if broken is None:
            return None
        rest = self._continuation(lane)
        if rest is None:
            raise self._interrupted(broken.message) from broken
        return rest

    async def _open(self, lane: Lane, continuation: bool) -> Segment:
        parts = self._shared
        sent = self.content if continuation else None
        sized = self._request if sent is None else prefilled(self._request, sent)
        try:
            done = await parts.loop.run(
                lane,
                self._deadline,
                lambda source: ask_source(
                    parts,
                    self.lane,
                    source,
                    self._request,
                    self._plan,
                    sent,
                    self._attempts.refused,
                ),
                request_tokens=request_tokens(sized),
                hold=True,
                hedged=not continuation,
                discard=OpenedAnswer.aclose,
            )
        except CallFailed as exc:
            self._attempts.ran(exc.attempts, continuation)
            exc.attempts = self.attempts
            raise
        self._attempts.ran(done.attempts, continuation)
        assert done.held is not None, "a held run hands its attempt over"
        self.source = done.source.name
        if self.first_token_at is None:
            self.first_token_at = parts.clock.now()
        began = done.held.started - self._started if lane.hedging is not None else None
        index = self._attempts.opened(self.source, continuation, hedge=done.hedge, began=began)
        clock = parts.clock
        return Segment(
            done.source, done.result, done.held, index, continuation, lane, clock, self._deadline
        )

    async def _settle(self, segment: Segment, broken: AttemptFailure | None) -> None:
        """Close the segment's attempt: its record and usage first, then its admission."""
        attempt, usage = segment.ended(broken, self._attempts.opening(segment.index))
        self._attempts.ended(segment.index, attempt, usage)
        await segment.settle(self._shared.loop.admission, broken, usage)

    def _interrupted(self, why: str) -> StreamInterrupted:
        return StreamInterrupted(
            f"lane {self.lane.name}: stream interrupted after content was sent: {why}",
            lane=self.lane.name,
            attempts=self.attempts,
            elapsed=self.elapsed,
            deadline=self._deadline.budget,
        )

    def _continuation(self, lane: Lane) -> Lane | None:
        """A lane view of the sources that may continue the answer, not yet tried."""
        candidates = [ContinuingSource(s.name, s.config.accepts_prefill) for s in lane.sources]
        names = self._plan.continuing(
            candidates,
            self._attempts.tried,
            tool_deltas=self._sent.tool_deltas,
            expired=self._deadline.expired(self._shared.clock.now()),
        )
        sources = [s for s in lane.sources if s.name in names]
        return dataclasses.replace(lane, sources=sources) if sources else None

    def handover(self) -> Resume | None:
        """Where a later lane of the chain may resume this answer, broken after content was sent.

        See ``ContinuationPlan.hands_over``.
        """
        if not self._plan.hands_over(tool_deltas=self._sent.tool_deltas):
            return None
        return Resume(self.content, self._sent.answer_id)
