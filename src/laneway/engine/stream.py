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
A lane may resume an answer an earlier lane of the chain began and broke off
(``Resume``): every source is then asked afresh and its answer spliced, as
under ``continue_on_cut: restart``, never continued from a prefill.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from laneway.core.errors import AttemptFailure, CallFailed, StreamInterrupted
from laneway.core.estimate import chat_usage_or_estimate
from laneway.core.failures import FailureKind
from laneway.core.messages import ChatMessage
from laneway.core.records import CallMeta
from laneway.core.transport import HttpStream
from laneway.core.types import NO_USAGE, Attempt, ChatChunk, ChatRequest, Usage
from laneway.core.units import format_duration
from laneway.core.usage import sum_usage
from laneway.policy.deadline import Deadline
from laneway.policy.quota import request_tokens, used_tokens

if TYPE_CHECKING:
    from laneway.engine.admission import Admitted
    from laneway.engine.lane import Lane, Source
    from laneway.engine.parts import CallParts

FINAL_USAGE_GRACE = 1.0


@dataclass(slots=True)
class _Progress:
    """What one upstream answer has delivered so far (forwarded or not)."""

    malformed: int = 0
    finished: bool = False
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    usage: Usage | None = None


@dataclass(slots=True)
class _Opened:
    """A stream that produced its first token: the connection and what was read."""

    stack: AsyncExitStack
    events: AsyncGenerator[ChatChunk, None]
    buffered: list[ChatChunk]
    progress: _Progress
    request: ChatRequest
    splice: _Splice | None = None


@dataclass(slots=True)
class _Segment:
    """One upstream answer of the stream, from its admission to its end."""

    source: Source
    opened: _Opened
    held: Admitted
    index: int
    """Where the segment's attempt is in the stream's attempts."""
    continuation: bool


@dataclass(slots=True)
class _Part:
    """A finished segment: where its attempt record is and what it used."""

    index: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class Resume:
    """An answer an earlier lane of the chain began: the text sent, and the id its chunks carry."""

    sent: str
    answer_id: object


class _Broken(Exception):
    """A segment ended before its final chunk; ``failure`` says how."""

    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(slots=True)
class _Splice:
    """A restarted answer's opening, held back until it matches the text already sent.

    ``take`` returns the chunk to forward (``None`` while held back), the
    first one cut to the part the caller does not have yet, and raises a
    ``diverged`` failure as soon as the answer departs from the sent text.
    """

    sent: str
    seen: list[str] = field(default_factory=list)
    done: bool = False

    def take(self, chunk: ChatChunk) -> ChatChunk | None:
        if self.done:
            return chunk
        if chunk.content:
            self.seen.append(chunk.content)
        seen = "".join(self.seen)
        if not (self.sent.startswith(seen) or seen.startswith(self.sent)):
            raise AttemptFailure(
                FailureKind.DIVERGED, "the restarted answer differs from the text sent"
            )
        if len(seen) < len(self.sent):
            if chunk.finish_reason is not None:
                raise AttemptFailure(
                    FailureKind.DIVERGED, "the restarted answer is shorter than the text sent"
                )
            return None
        self.done = True
        return _with_content(chunk, seen[len(self.sent) :])


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
        self._meta = meta
        self._call = parts.recorder.start()
        self.lane = lane
        self._request = request
        self._deadline = deadline
        self.source: str | None = None
        self.model: str | None = None
        self._attempts: list[Attempt] = []
        self._parts: list[_Part] = []
        self._refusals: list[Attempt] = []
        self.malformed_events = 0
        self.first_token_at: float | None = None
        self._content: list[str] = [resume.sent] if resume is not None else []
        self._tool_deltas = False
        self._answer_id: object = resume.answer_id if resume is not None else None
        self._started = parts.clock.now()
        self._iterator: AsyncGenerator[ChatChunk, None] | None = None
        self.cost: Decimal | None = None
        self.cost_unknown: str | None = None

    @property
    def attempts(self) -> tuple[Attempt, ...]:
        """Every attempt so far; a continued stream's answers carry their own usage."""
        if len(self._parts) < 2:
            return tuple(self._attempts)
        return self.priced_attempts()

    def priced_attempts(self) -> tuple[Attempt, ...]:
        """Every attempt, each answer carrying its own usage (for a call that other lanes'
        answers continued, priced part by part)."""
        attempts = list(self._attempts)
        for part in self._parts:
            attempts[part.index] = dataclasses.replace(attempts[part.index], usage=part.usage)
        return tuple(attempts)

    @property
    def usage(self) -> Usage | None:
        """The stream's usage once it ended (``None`` before, or when unreported).

        One answer's usage is the provider's (estimated when the lane has
        ``estimate_missing_usage``, or when it was broken off before its usage
        chunk). A continued stream's is the sum over its answers: prompt and
        completion tokens of each request, ``estimated`` when any part is.
        """
        if not self._parts:
            return None
        if len(self._parts) == 1:
            usage = self._parts[0].usage
            return usage if usage.known else None
        return sum_usage(part.usage for part in self._parts)

    @property
    def content(self) -> str:
        """The answer forwarded so far."""
        return "".join(self._content)

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
                async with aclosing(self._forward(segment)) as chunks:
                    async for chunk in chunks:
                        yield chunk
            except _Broken as exc:
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

    async def _open(self, lane: Lane, continuation: bool) -> _Segment:
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
            self._attempts.extend([*_marked(exc.attempts, continuation), *self._refusals])
            self._refusals.clear()
            exc.attempts = self.attempts
            raise
        self._attempts.extend([*_marked(done.attempts, continuation), *self._refusals])
        self._refusals.clear()
        assert done.held is not None, "a held run hands its attempt over"
        self.source = done.source.name
        if self.first_token_at is None:
            self.first_token_at = parts.clock.now()
        index = len(self._attempts)
        self._attempts.append(Attempt(self.source, "ok", 0.0, 200, continuation=continuation))
        return _Segment(done.source, done.result, done.held, index, continuation)

    def _prefilled(self) -> ChatRequest:
        """The caller's request with the answer sent so far as an assistant prefill."""
        prefill: ChatMessage = {"role": "assistant", "content": self.content}
        return ChatRequest([*self._request.messages, prefill], self._request.params)

    async def _attempt(self, source: Source, continuation: bool) -> _Opened:
        """Open the stream and read up to its first token (one attempt of the loop).

        A continuation goes to a prefill source with the prefill, to any other
        afresh, its answer to be spliced onto the text already sent. Under
        ``continue_on_cut: restart`` a prefill source that refuses the prefill
        (a rejection) is asked again at once without it, to be spliced.
        """
        if not continuation:
            return await self._opening(source, self._request, None)
        if self._resume is not None or not source.config.accepts_prefill:
            return await self._opening(source, self._request, _Splice(self.content))
        started = self._shared.clock.now()
        try:
            return await self._opening(source, self._prefilled(), None)
        except AttemptFailure as failure:
            if (
                failure.kind != FailureKind.REJECTED
                or self.lane.config.continue_on_cut != "restart"
            ):
                raise
            elapsed = self._shared.clock.now() - started
            why = f"refused the prefill ({failure.message}); asked again without it"
            refused = Attempt(source.name, failure.label, elapsed, failure.status, message=why)
            self._refusals.append(dataclasses.replace(refused, continuation=True))
        return await self._opening(source, self._request, _Splice(self.content))

    async def _opening(
        self, source: Source, request: ChatRequest, splice: _Splice | None
    ) -> _Opened:
        """Send ``request`` and read up to its first token.

        ``first_byte_timeout`` runs from the moment the request is sent: an
        upstream that accepts the connection and never answers fails the
        attempt then, like one that answers and never streams a token.
        """
        limit = self.lane.config.first_byte_timeout
        clock = self._shared.clock
        stack = AsyncExitStack()
        try:
            async with clock.deadline(math.inf if limit is None else clock.now() + limit):
                opened = await self._first_token(source, request, stack)
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
        self, source: Source, request: ChatRequest, stack: AsyncExitStack
    ) -> _Opened:
        provider = source.provider
        http = await stack.enter_async_context(
            self._shared.transport.stream(provider.chat_request(request, stream=True))
        )
        if http.status >= 400:
            body = await http.read()
            raise provider.failure(http.status, http.headers, body, self._shared.clock.wall())
        progress = _Progress()
        events = _events(http, source, progress)
        stack.push_async_callback(events.aclose)
        buffered: list[ChatChunk] = []
        async for chunk in events:
            buffered.append(chunk)
            if chunk.content or chunk.reasoning_content or _has_tool_delta(chunk):
                return _Opened(stack, events, buffered, progress, request)
            if chunk.finish_reason is not None:
                break
        if progress.finished and FailureKind.EMPTY not in self.lane.policy.retry_on:
            return _Opened(stack, events, buffered, progress, request)
        if progress.finished:
            raise AttemptFailure(FailureKind.EMPTY, "the upstream streamed an empty completion")
        raise AttemptFailure(FailureKind.CUT, "stream ended before its first token")

    async def _forward(self, segment: _Segment) -> AsyncGenerator[ChatChunk, None]:
        opened = segment.opened
        progress, splice = opened.progress, opened.splice
        for chunk in opened.buffered:
            taken = self._spliced(splice, chunk)
            if taken is not None:
                yield self._took(taken)
        while True:
            try:
                upcoming = await self._next(opened.events, progress)
            except (AttemptFailure, TimeoutError) as exc:
                if progress.finished:
                    break
                raise _Broken(self._why_broken(exc)) from None
            if upcoming is None:
                break
            taken = self._spliced(splice, upcoming)
            if taken is not None:
                yield self._took(taken)
        if not progress.finished:
            raise _Broken(AttemptFailure(FailureKind.CUT, "stream ended without its final chunk"))

    @staticmethod
    def _spliced(splice: _Splice | None, chunk: ChatChunk) -> ChatChunk | None:
        if splice is None:
            return chunk
        try:
            return splice.take(chunk)
        except AttemptFailure as failure:
            raise _Broken(failure) from None

    async def _next(
        self, events: AsyncIterator[ChatChunk], progress: _Progress
    ) -> ChatChunk | None:
        """The next chunk, waiting no longer than idle, grace and deadline allow."""
        now = self._shared.clock.now()
        limits = [self._deadline.remaining(now)]
        if self.lane.config.idle_timeout is not None:
            limits.append(self.lane.config.idle_timeout)
        if progress.finished:
            limits.append(FINAL_USAGE_GRACE)
        async with self._shared.clock.deadline(now + max(min(limits), 0.0)):
            return await anext(events, None)

    def _took(self, chunk: ChatChunk) -> ChatChunk:
        """Note what the caller receives; a continuation's chunks keep the first answer's id."""
        raw = chunk.raw
        if raw is not None and "id" in raw:
            if self._answer_id is None:
                self._answer_id = raw["id"]
            elif raw["id"] != self._answer_id:
                chunk = dataclasses.replace(chunk, raw={**raw, "id": self._answer_id})
        if chunk.content:
            self._content.append(chunk.content)
        if chunk.model:
            self.model = chunk.model
        if _has_tool_delta(chunk):
            self._tool_deltas = True
        return chunk

    def _why_broken(self, cause: BaseException) -> AttemptFailure:
        if self._deadline.expired(self._shared.clock.now()):
            return AttemptFailure(FailureKind.DEADLINE, "the deadline passed mid-stream")
        if isinstance(cause, TimeoutError):
            idle = format_duration(self.lane.config.idle_timeout or 0)
            return AttemptFailure(FailureKind.TIMEOUT, f"no data for idle_timeout {idle}")
        if isinstance(cause, AttemptFailure):
            return cause
        return AttemptFailure(FailureKind.CUT, str(cause))

    async def _settle(self, segment: _Segment, broken: AttemptFailure | None) -> None:
        """Close the segment's attempt: its record, its usage, its slot and quota.

        A segment that neither finished nor broke was given up by its caller
        (closed, cancelled): it settles what it consumed without judging the source.
        """
        opened, admission = segment.opened, self._shared.loop.admission
        finished = broken is None and opened.progress.finished
        usage = self._segment_usage(opened, estimate=not finished)
        tokens = used_tokens(usage) if usage.known else None
        elapsed = self._shared.clock.now() - segment.held.started
        opening = self._attempts[segment.index]
        if finished:
            attempt = dataclasses.replace(opening, elapsed=elapsed)
        elif broken is None:
            attempt = Attempt(opening.source, "cancelled", elapsed, message="closed by the caller")
        else:
            attempt = Attempt(opening.source, broken.label, elapsed, message=broken.message)
        continued = dataclasses.replace(attempt, continuation=segment.continuation)
        self._attempts[segment.index] = continued
        self._parts.append(_Part(segment.index, usage))
        if finished:
            await admission.settle(segment.held, None, tokens)
        elif broken is None or broken.kind == FailureKind.DEADLINE:
            await admission.abandon(segment.held, tokens)
        else:
            await admission.settle(segment.held, broken, tokens)

    def _segment_usage(self, opened: _Opened, *, estimate: bool) -> Usage:
        """The provider's usage; else an estimate where the lane or a break calls for one."""
        progress = opened.progress
        reported = progress.usage or NO_USAGE
        return chat_usage_or_estimate(
            reported,
            estimate or self.lane.config.estimate_missing_usage,
            opened.request.messages,
            "".join(progress.content),
            "".join(progress.reasoning),
        )

    def _interrupted(self, why: str) -> StreamInterrupted:
        return StreamInterrupted(
            f"lane {self.lane.name}: stream interrupted after content was sent: {why}",
            lane=self.lane.name,
            attempts=self.attempts,
            elapsed=self.elapsed,
            deadline=self._deadline.budget,
        )

    def _continuation(self, lane: Lane) -> Lane | None:
        """A lane view of the sources that may continue the answer, not yet tried.

        ``continue_on_cut: true`` continues on sources that ``accepts_prefill``;
        ``restart`` also asks the others afresh (their answer is spliced), unless
        tool-call deltas were sent, which a text comparison cannot vouch for.
        """
        mode = "restart" if self._resume is not None else lane.config.continue_on_cut
        if not mode or self._deadline.expired(self._shared.clock.now()):
            return None
        restart = mode == "restart" and not self._tool_deltas
        tried = {a.source for a in self._attempts}
        sources = [
            s for s in lane.sources if s.name not in tried and (s.config.accepts_prefill or restart)
        ]
        return dataclasses.replace(lane, sources=sources) if sources else None

    def handover(self) -> Resume | None:
        """Where a later lane of the chain may resume this answer, broken after content was sent.

        Only under ``continue_on_cut: restart`` (the later lane's answer is
        spliced only if it begins with exactly the text sent), or when this
        lane was itself resuming; never once tool-call deltas were sent.
        """
        restart = self._resume is not None or self.lane.config.continue_on_cut == "restart"
        if not restart or self._tool_deltas:
            return None
        return Resume(self.content, self._answer_id)


def _marked(attempts: tuple[Attempt, ...], continuation: bool) -> list[Attempt]:
    """Attempts of a continuation, marked as such."""
    if not continuation:
        return list(attempts)
    return [dataclasses.replace(a, continuation=True) for a in attempts]


async def _events(
    http: HttpStream, source: Source, progress: _Progress
) -> AsyncGenerator[ChatChunk, None]:
    """Parsed SSE events; malformed ones are skipped and counted, ``[DONE]`` ends."""
    parser = source.provider.stream_parser()
    async for line in http.lines():
        if not line.startswith(b"data:"):
            continue
        try:
            chunk = parser.parse_event(line[5:].strip())
        except ValueError:
            progress.malformed += 1
            continue
        if chunk is None:
            return
        if chunk.content:
            progress.content.append(chunk.content)
        if chunk.reasoning_content:
            progress.reasoning.append(chunk.reasoning_content)
        if chunk.finish_reason is not None:
            progress.finished = True
        if chunk.usage is not None:
            progress.usage = chunk.usage
            if progress.finished:
                yield chunk
                return
        yield chunk


def _has_tool_delta(chunk: ChatChunk) -> bool:
    raw: dict[str, Any] = chunk.raw or {}
    choices = raw.get("choices") or [{}]
    return bool((choices[0].get("delta") or {}).get("tool_calls"))


def _with_content(chunk: ChatChunk, text: str) -> ChatChunk:
    """``chunk`` carrying ``text`` as its content and nothing held back before it."""
    raw = chunk.raw
    choices = (raw or {}).get("choices") or []
    if raw is not None and choices:
        delta = {
            k: v for k, v in (choices[0].get("delta") or {}).items() if k != "reasoning_content"
        }
        first = {**choices[0], "delta": {**delta, "content": text}}
        raw = {**raw, "choices": [first, *choices[1:]]}
    return dataclasses.replace(chunk, content=text, reasoning_content="", raw=raw)
