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
from typing import TYPE_CHECKING, Any

from laneway.core.errors import AttemptFailure, CallFailed, StreamInterrupted
from laneway.core.messages import ChatMessage
from laneway.core.records import CallMeta
from laneway.core.types import NO_USAGE, Attempt, ChatChunk, ChatRequest, Usage
from laneway.engine.continuation import (
    ContinuationPlan,
    ContinuingSource,
    Opening,
    Resume,
    Splice,
)
from laneway.engine.segment import Broken, OpenedAnswer, Segment, open_answer
from laneway.engine.stream_facts import SentAnswer, StreamAttempts
from laneway.policy.deadline import Deadline
from laneway.policy.quota import request_tokens

if TYPE_CHECKING:
    from laneway.engine.lane import Lane, Source
    from laneway.engine.parts import CallParts


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
        self._iterator: AsyncGenerator[ChatChunk, None] | None = None
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
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def aclose(self) -> None:
        """Stop the stream and release its upstream connection at once."""
        if self._iterator is not None:
            await self._iterator.aclose()

    async def __aenter__(self) -> LaneStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self) -> AsyncGenerator[ChatChunk, None]:
        recorder = self._shared.recorder
        failures = recorder.failures(self.lane, self._call, self._meta, self._facts)
        try:
            with failures:
                async with aclosing(self._segments_in_turn()) as segments:
                    async for chunk in segments:
                        yield chunk
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

    async def _segments_in_turn(self) -> AsyncGenerator[ChatChunk, None]:
        """The answer, segment after segment, until one finishes or none can continue."""
        lane, continuation = self.lane, self._resume is not None
        while True:
            try:
                segment = await self._open(lane, continuation)
            except CallFailed as exc:
                if not continuation:
                    raise
                raise self._interrupted("the continuation failed: " + str(exc)) from exc
            broken: AttemptFailure | None = None
            try:
                async with aclosing(segment.chunks()) as chunks:
                    async for chunk in chunks:
                        yield self._sent.took(chunk)
            except Broken as exc:
                broken = exc.failure
            finally:
                self.malformed_events += segment.opened.progress.malformed
                await segment.opened.stack.aclose()
                await self._settle(segment, broken)
            if broken is None:
                return
            rest = self._continuation(lane)
            if rest is None:
                raise self._interrupted(broken.message) from broken
            lane, continuation = rest, True

    async def _open(self, lane: Lane, continuation: bool) -> Segment:
        parts = self._shared
        sized = self._prefilled() if continuation else self._request
        try:
            done = await parts.loop.run(
                lane,
                self._deadline,
                lambda source: self._attempt(source, continuation),
                request_tokens=request_tokens(sized),
                hold=True,
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
        index = self._attempts.opened(self.source, continuation)
        clock = parts.clock
        return Segment(
            done.source, done.result, done.held, index, continuation, lane, clock, self._deadline
        )

    def _prefilled(self) -> ChatRequest:
        """The caller's request with the answer sent so far as an assistant prefill."""
        prefill: ChatMessage = {"role": "assistant", "content": self.content}
        return ChatRequest([*self._request.messages, prefill], self._request.params)

    async def _attempt(self, source: Source, continuation: bool) -> OpenedAnswer:
        """Open the stream and read up to its first token (one attempt of the loop).

        A continuation goes to a prefill source with the prefill, to any other
        afresh, its answer to be spliced onto the text already sent. Under
        ``continue_on_cut: restart`` a prefill source that refuses the prefill
        (a rejection) is asked again at once without it, to be spliced.
        """
        if not continuation:
            return await self._opening(source, self._request, None)
        if self._plan.opening(source.config.accepts_prefill) is Opening.SPLICE:
            return await self._opening(source, self._request, Splice(self.content))
        started = self._shared.clock.now()
        try:
            return await self._opening(source, self._prefilled(), None)
        except AttemptFailure as failure:
            if not self._plan.splice_after_refusal(failure):
                raise
            elapsed = self._shared.clock.now() - started
            why = f"refused the prefill ({failure.message}); asked again without it"
            refused = Attempt(source.name, failure.label, elapsed, failure.status, message=why)
            self._attempts.refused(dataclasses.replace(refused, continuation=True))
        return await self._opening(source, self._request, Splice(self.content))

    async def _opening(
        self, source: Source, request: ChatRequest, splice: Splice | None
    ) -> OpenedAnswer:
        parts = self._shared
        return await open_answer(parts.transport, parts.clock, self.lane, source, request, splice)

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
