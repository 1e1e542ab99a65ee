"""One upstream answer of a stream (a segment), from its admission to its end.

A streamed call's answer may come in several segments: after a cut, a
continuation is another upstream request. A segment is opened as one
attempt of the call loop (``open_answer`` reads up to its first token under
``first_byte_timeout``); the loop then hands its admission over (``hold``)
and the segment owns it: the concurrency slot, the quota reservation, the
breaker's probe. ``Segment.chunks`` forwards what follows, each event
waiting no longer than ``idle_timeout`` and the deadline allow, and raises
``Broken`` when the answer stops before its final chunk. ``Segment.ended``
and ``Segment.settle`` then close the attempt with what it really used: the provider's usage, or
an estimate for an answer broken off before its usage chunk (or on a lane
with ``estimate_missing_usage``). A segment its caller gave up (closed,
cancelled) frees its slot and keeps its reservation without judging the
source; so does one the deadline cut.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from laneway.core.errors import AttemptFailure
from laneway.core.estimate import chat_usage_or_estimate
from laneway.core.failures import FailureKind
from laneway.core.messages import ChatMessage
from laneway.core.types import NO_USAGE, Attempt, ChatChunk, ChatRequest, Usage
from laneway.core.units import format_duration
from laneway.engine.continuation import ContinuationPlan, Opening, Splice
from laneway.engine.events import AnswerProgress, UpstreamEvents
from laneway.policy.quota import used_tokens

if TYPE_CHECKING:
    from laneway.core.clock import Clock
    from laneway.core.transport import Transport
    from laneway.engine.admission import Admitted, SourceAdmission
    from laneway.engine.lane import Lane, Source
    from laneway.engine.parts import CallParts
    from laneway.policy.deadline import Deadline

FINAL_USAGE_GRACE = 1.0
"""Seconds a stream whose final chunk came waits for its usage chunk (or ``[DONE]``)."""


class Broken(Exception):
    """A segment ended before its final chunk; ``failure`` says how."""

    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(slots=True)
class OpenedAnswer:
    """An upstream answer that produced its first token: the connection and what was read."""

    stack: AsyncExitStack
    events: UpstreamEvents
    buffered: list[ChatChunk]
    request: ChatRequest
    splice: Splice | None = None

    @property
    def progress(self) -> AnswerProgress:
        """What the answer delivered so far."""
        return self.events.progress

    async def aclose(self) -> None:
        """Close the answer's connection (a hedge race's loser that opened too)."""
        await self.stack.aclose()


async def open_answer(
    transport: Transport,
    clock: Clock,
    lane: Lane,
    source: Source,
    request: ChatRequest,
    splice: Splice | None,
) -> OpenedAnswer:
    """Send ``request`` to ``source`` and read up to its first token.

    ``first_byte_timeout`` runs from the moment the request is sent: an
    upstream that accepts the connection and never answers fails the
    attempt then, like one that answers and never streams a token.
    """
    limit = lane.config.first_byte_timeout
    stack = AsyncExitStack()
    try:
        async with clock.deadline(math.inf if limit is None else clock.now() + limit):
            opened = await _first_token(transport, clock, lane, source, request, stack)
            opened.splice = splice
            return opened
    except TimeoutError:
        await stack.aclose()
        wait = format_duration(limit or 0)
        raise AttemptFailure(
            FailureKind.TIMEOUT, f"no first token within first_byte_timeout {wait} of sending"
        ) from None
    except BaseException:
        await stack.aclose()
        raise


async def _first_token(
    transport: Transport,
    clock: Clock,
    lane: Lane,
    source: Source,
    request: ChatRequest,
    stack: AsyncExitStack,
) -> OpenedAnswer:
    provider = source.provider
    http = await stack.enter_async_context(
        transport.stream(provider.chat_request(request, stream=True))
    )
    if http.status >= 400:
        body = await http.read()
        raise provider.failure(http.status, http.headers, body, clock.wall())
    events = UpstreamEvents(http, provider.stream_parser(), AnswerProgress())
    stack.push_async_callback(events.aclose)
    buffered: list[ChatChunk] = []
    while (chunk := await events.next()) is not None:
        buffered.append(chunk)
        if chunk.content or chunk.reasoning_content or chunk.tool_call_delta:
            return OpenedAnswer(stack, events, buffered, request)
        if chunk.finish_reason is not None:
            break
    progress = events.progress
    if progress.finished and FailureKind.EMPTY not in lane.policy.retry_on:
        return OpenedAnswer(stack, events, buffered, request)
    if progress.finished:
        raise AttemptFailure(FailureKind.EMPTY, "the upstream streamed an empty completion")
    raise AttemptFailure(FailureKind.CUT, "stream ended before its first token")


def prefilled(request: ChatRequest, sent: str) -> ChatRequest:
    """The caller's request with the answer sent so far as an assistant prefill."""
    prefill: ChatMessage = {"role": "assistant", "content": sent}
    return ChatRequest([*request.messages, prefill], request.params)


async def ask_source(
    parts: CallParts,
    lane: Lane,
    source: Source,
    request: ChatRequest,
    plan: ContinuationPlan,
    sent: str | None,
    refused: Callable[[Attempt], None],
) -> OpenedAnswer:
    """Open a segment on ``source`` and read up to its first token (one attempt of the loop).

    ``sent``: the text a continuation goes on from (``None``: the answer's
    first segment). A continuation goes to a prefill source with the prefill,
    to any other afresh, its answer to be spliced onto the text sent; a
    prefill the source refuses is noted (``refused``) and asked again at once
    without it, spliced, where the plan says so.
    """
    transport, clock = parts.transport, parts.clock
    if sent is None:
        return await open_answer(transport, clock, lane, source, request, None)
    if plan.opening(source.config.accepts_prefill) is Opening.SPLICE:
        return await open_answer(transport, clock, lane, source, request, Splice(sent))
    started = clock.now()
    try:
        return await open_answer(transport, clock, lane, source, prefilled(request, sent), None)
    except AttemptFailure as failure:
        if not plan.splice_after_refusal(failure):
            raise
        elapsed = clock.now() - started
        why = f"refused the prefill ({failure.message}); asked again without it"
        attempt = Attempt(source.name, failure.label, elapsed, failure.status, message=why)
        refused(dataclasses.replace(attempt, continuation=True))
    return await open_answer(transport, clock, lane, source, request, Splice(sent))


@dataclass(slots=True)
class Segment:
    """One upstream answer of the stream, holding its attempt's admission until it ends."""

    source: Source
    opened: OpenedAnswer
    held: Admitted
    index: int
    """Where the segment's attempt is in the stream's attempts."""
    continuation: bool
    lane: Lane
    clock: Clock
    deadline: Deadline

    async def chunks(self) -> AsyncGenerator[ChatChunk, None]:
        """The answer's chunks for the caller (a splice's repeat held back); ``Broken`` at a cut."""
        opened = self.opened
        progress, splice = opened.progress, opened.splice
        for chunk in opened.buffered:
            taken = _spliced(splice, chunk)
            if taken is not None:
                yield taken
        while True:
            try:
                upcoming = await self._next()
            except (AttemptFailure, TimeoutError) as exc:
                if progress.finished:
                    break
                raise Broken(self.why_broken(exc)) from None
            if upcoming is None:
                break
            taken = _spliced(splice, upcoming)
            if taken is not None:
                yield taken
        if not progress.finished:
            raise Broken(AttemptFailure(FailureKind.CUT, "stream ended without its final chunk"))

    async def _next(self) -> ChatChunk | None:
        """The next chunk, waiting no longer than idle, grace and deadline allow."""
        now = self.clock.now()
        async with self.clock.deadline(now + self.wait_limit(now)):
            return await self.opened.events.next()

    def wait_limit(self, now: float) -> float:
        """How long the next read may take: the deadline's rest, idle, the final grace."""
        limit = self.deadline.remaining(now)
        idle = self.lane.config.idle_timeout
        if idle is not None and idle < limit:
            limit = idle
        if self.opened.progress.finished and limit > FINAL_USAGE_GRACE:
            limit = FINAL_USAGE_GRACE
        return max(limit, 0.0)

    def why_broken(self, cause: BaseException) -> AttemptFailure:
        """The failure a read that ended in ``cause`` means: the deadline, idle, a cut."""
        if self.deadline.expired(self.clock.now()):
            return AttemptFailure(FailureKind.DEADLINE, "the deadline passed mid-stream")
        if isinstance(cause, TimeoutError):
            idle = format_duration(self.lane.config.idle_timeout or 0)
            return AttemptFailure(FailureKind.TIMEOUT, f"no data for idle_timeout {idle}")
        if isinstance(cause, AttemptFailure):
            return cause
        return AttemptFailure(FailureKind.CUT, str(cause))

    def ended(self, broken: AttemptFailure | None, opening: Attempt) -> tuple[Attempt, Usage]:
        """The segment's attempt record (``opening`` brought up to its end) and its usage.

        A segment that neither finished nor broke was given up by its caller
        (closed, cancelled).
        """
        finished = broken is None and self.opened.progress.finished
        usage = self.usage(estimate=not finished)
        elapsed = self.clock.now() - self.held.started
        if finished:
            attempt = dataclasses.replace(opening, elapsed=elapsed)
        elif broken is None:
            attempt = Attempt(opening.source, "cancelled", elapsed, message="closed by the caller")
        else:
            attempt = Attempt(opening.source, broken.label, elapsed, message=broken.message)
        return dataclasses.replace(attempt, continuation=self.continuation), usage

    async def settle(
        self, admission: SourceAdmission, broken: AttemptFailure | None, usage: Usage
    ) -> None:
        """Settle the held admission: slot, quota (by ``usage``), the source's judgement.

        A finished answer is a success and a broken one a failure; one given
        up by its caller, or cut by the deadline, frees its slot and keeps its
        reservation without judging the source.
        """
        tokens = used_tokens(usage) if usage.known else None
        if broken is None and self.opened.progress.finished:
            await admission.settle(self.held, None, tokens)
        elif broken is None or broken.kind == FailureKind.DEADLINE:
            await admission.abandon(self.held, tokens)
        else:
            await admission.settle(self.held, broken, tokens)

    def usage(self, *, estimate: bool) -> Usage:
        """The provider's usage; else an estimate where the lane or a break calls for one.

        The answer's text is read (a relayed block's parsed) only for an estimate.
        """
        progress = self.opened.progress
        reported = progress.usage or NO_USAGE
        estimate = estimate or self.lane.config.estimate_missing_usage
        if reported.known or not estimate:
            return reported
        return chat_usage_or_estimate(
            reported,
            estimate,
            self.opened.request.messages,
            progress.text(),
            progress.reasoning_text(),
        )


def _spliced(splice: Splice | None, chunk: ChatChunk) -> ChatChunk | None:
    if splice is None:
        return chunk
    try:
        return splice.take(chunk)
    except AttemptFailure as failure:
        raise Broken(failure) from None
