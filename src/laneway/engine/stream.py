"""Streaming chat: retried like any call until content flows, honest after.

Before the first content reaches the caller, a stream that fails (error
status, no first token within ``first_byte_timeout``, cut, empty) is one
failed attempt of the ordinary call loop. After content has been forwarded, a
cut, a stall past ``idle_timeout`` or the deadline ends the stream with
``StreamInterrupted``, never as a clean success, unless the lane continues the
answer on a source that ``accepts_prefill``. A stream is complete once its
final chunk (a ``finish_reason``) has arrived; a missing ``[DONE]`` after it
holds the caller for at most ``FINAL_USAGE_GRACE`` while the usage chunk is
awaited.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from laneway.accounting.estimate import chat_usage_or_estimate
from laneway.core.errors import AttemptFailure, CallFailed, StreamInterrupted
from laneway.core.records import CallMeta
from laneway.core.transport import HttpStream
from laneway.core.types import NO_USAGE, Attempt, ChatChunk, ChatRequest, Usage
from laneway.core.units import format_duration
from laneway.policy.deadline import Deadline
from laneway.policy.quota import estimate_tokens

if TYPE_CHECKING:
    from laneway.engine.gateway import Engine
    from laneway.engine.lane import Lane, Source

FINAL_USAGE_GRACE = 1.0


@dataclass(slots=True)
class _Progress:
    """What one upstream stream has delivered so far."""

    malformed: int = 0
    finished: bool = False
    content: list[str] = field(default_factory=list)
    usage: Usage | None = None


@dataclass(slots=True)
class _Opened:
    """A stream that produced its first token: the connection and what was read."""

    stack: AsyncExitStack
    events: AsyncGenerator[ChatChunk, None]
    buffered: list[ChatChunk]
    progress: _Progress


class ChatStream:
    """An async iterator of ``ChatChunk``; after it ends, the call's facts.

    ``source``, ``attempts``, ``usage``, ``content`` and ``malformed_events``
    are filled as the stream runs.
    """

    def __init__(
        self,
        engine: Engine,
        lane: Lane,
        request: ChatRequest,
        deadline: Deadline,
        meta: CallMeta | None = None,
    ) -> None:
        self._engine = engine
        self._meta = meta
        self._call = engine.recorder.start()
        self.lane = lane
        self._request = request
        self._deadline = deadline
        self.source: str | None = None
        self.model: str | None = None
        self.attempts: tuple[Attempt, ...] = ()
        self.malformed_events = 0
        self._segments: list[Usage | None] = []
        self.first_token_at: float | None = None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._started = engine.clock.now()
        self._iterator: AsyncGenerator[ChatChunk, None] | None = None

    @property
    def usage(self) -> Usage | None:
        """The stream's usage once it ended (``None`` before; unknown stays unknown).

        On a lane with ``estimate_missing_usage``, unreported usage of a finished
        stream is estimated from what was sent and streamed (marked ``estimated``).
        """
        usage = combined_usage(self._segments)
        if not self._segments or not self.lane.config.estimate_missing_usage:
            return usage
        return chat_usage_or_estimate(
            usage or NO_USAGE,
            True,
            self._request.messages,
            self.content,
            "".join(self._reasoning),
        )

    @property
    def content(self) -> str:
        """The answer forwarded so far."""
        return "".join(self._content)

    @property
    def elapsed(self) -> float:
        """Seconds since the call started."""
        return self._engine.clock.now() - self._started

    def __aiter__(self) -> AsyncGenerator[ChatChunk, None]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def aclose(self) -> None:
        """Stop the stream and release its upstream connection at once."""
        if self._iterator is not None:
            await self._iterator.aclose()

    async def __aenter__(self) -> ChatStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self) -> AsyncGenerator[ChatChunk, None]:
        recorder = self._engine.recorder
        try:
            async with aclosing(self._segments_in_turn()) as segments:
                async for chunk in segments:
                    yield chunk
        except (CallFailed, asyncio.CancelledError, GeneratorExit) as exc:
            recorder.failed(self.lane, self._call, self._meta, exc, **self._facts())
            raise
        recorder.ok(self.lane, self._call, self._meta, status=200, **self._facts())

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
        lane: Lane | None = self.lane
        request = self._request
        while lane is not None:
            opened = await self._open(lane, request)
            try:
                async with aclosing(self._forward(opened)) as chunks:
                    async for chunk in chunks:
                        yield chunk
                return
            except StreamInterrupted:
                self._segments.append(opened.progress.usage)
                lane, request = self._continuation(lane)
                if lane is None:
                    raise
            finally:
                self.malformed_events += opened.progress.malformed
                await opened.stack.aclose()

    async def _open(self, lane: Lane, request: ChatRequest) -> _Opened:
        engine = self._engine
        try:
            done = await engine.loop.run(
                lane,
                self._deadline,
                lambda s: self._attempt(s, request),
                request_tokens=estimate_tokens(request),
            )
        except CallFailed as exc:
            exc.attempts = self.attempts = self.attempts + exc.attempts
            raise
        self.attempts += done.attempts
        self.source = done.source.name
        self.first_token_at = engine.clock.now()
        return done.result

    async def _attempt(self, source: Source, request: ChatRequest) -> _Opened:
        """Open the stream and read up to its first token (one attempt of the loop)."""
        provider, stack = source.provider, AsyncExitStack()
        try:
            http = await stack.enter_async_context(
                self._engine.transport.stream(provider.chat_request(request, stream=True))
            )
            if http.status >= 400:
                body = await http.read()
                raise provider.failure(http.status, http.headers, body, self._engine.clock.wall())
            progress = _Progress()
            events = _events(http, source, progress)
            stack.push_async_callback(events.aclose)
            buffered = await self._first_token(events, progress)
            return _Opened(stack, events, buffered, progress)
        except BaseException:
            await stack.aclose()
            raise

    async def _first_token(
        self, events: AsyncIterator[ChatChunk], progress: _Progress
    ) -> list[ChatChunk]:
        limit = self.lane.config.first_byte_timeout
        buffered: list[ChatChunk] = []
        try:
            async with asyncio.timeout(limit):
                async for chunk in events:
                    buffered.append(chunk)
                    if chunk.content or chunk.reasoning_content or _has_tool_delta(chunk):
                        return buffered
                    if chunk.finish_reason is not None:
                        break
        except TimeoutError:
            raise AttemptFailure(
                "timeout", f"no first token within first_byte_timeout {format_duration(limit or 0)}"
            ) from None
        if progress.finished and "empty" not in self.lane.policy.retry_on:
            return buffered
        if progress.finished:
            raise AttemptFailure("empty", "the upstream streamed an empty completion")
        raise AttemptFailure("cut", "stream ended before its first token")

    async def _forward(self, opened: _Opened) -> AsyncGenerator[ChatChunk, None]:
        progress = opened.progress
        for chunk in opened.buffered:
            yield self._took(chunk)
        while True:
            try:
                upcoming = await self._next(opened.events, progress)
            except (AttemptFailure, TimeoutError) as exc:
                if progress.finished:
                    break
                raise self._interrupted(exc) from None
            if upcoming is None:
                break
            yield self._took(upcoming)
        if not progress.finished:
            raise self._interrupted(AttemptFailure("cut", "stream ended without its final chunk"))
        self._segments.append(progress.usage)

    async def _next(
        self, events: AsyncIterator[ChatChunk], progress: _Progress
    ) -> ChatChunk | None:
        """The next chunk, waiting no longer than idle, grace and deadline allow."""
        limits = [self._deadline.remaining(self._engine.clock.now())]
        if self.lane.config.idle_timeout is not None:
            limits.append(self.lane.config.idle_timeout)
        if progress.finished:
            limits.append(FINAL_USAGE_GRACE)
        async with asyncio.timeout(max(min(limits), 0.0)):
            return await anext(events, None)

    def _took(self, chunk: ChatChunk) -> ChatChunk:
        if chunk.content:
            self._content.append(chunk.content)
        if chunk.reasoning_content:
            self._reasoning.append(chunk.reasoning_content)
        if chunk.model:
            self.model = chunk.model
        return chunk

    def _interrupted(self, cause: BaseException) -> StreamInterrupted:
        expired = self._deadline.expired(self._engine.clock.now())
        if expired:
            why = "the deadline passed mid-stream"
        elif isinstance(cause, TimeoutError):
            why = f"no data for idle_timeout {format_duration(self.lane.config.idle_timeout or 0)}"
        else:
            why = str(cause)
        self.attempts += (Attempt(self.source or "?", "cut", self.elapsed, message=why),)
        return StreamInterrupted(
            f"lane {self.lane.name}: stream interrupted after content was sent: {why}",
            lane=self.lane.name,
            attempts=self.attempts,
            elapsed=self.elapsed,
            deadline=self.lane.config.deadline,
        )

    def _continuation(self, lane: Lane) -> tuple[Lane | None, ChatRequest]:
        """A lane view of the prefill sources not yet tried, and the prefilled request."""
        if not lane.config.continue_on_cut or self._deadline.expired(self._engine.clock.now()):
            return None, self._request
        tried = {a.source for a in self.attempts}
        sources = [s for s in lane.sources if s.config.accepts_prefill and s.name not in tried]
        if not sources:
            return None, self._request
        prefill = {"role": "assistant", "content": self.content}
        request = ChatRequest([*self._request.messages, prefill], self._request.params)
        return dataclasses.replace(lane, sources=sources), request


async def _events(
    http: HttpStream, source: Source, progress: _Progress
) -> AsyncGenerator[ChatChunk, None]:
    """Parsed SSE events; malformed ones are skipped and counted, ``[DONE]`` ends."""
    async for line in http.lines():
        if not line.startswith(b"data:"):
            continue
        try:
            chunk = source.provider.parse_event(line[5:].strip())
        except ValueError:
            progress.malformed += 1
            continue
        if chunk is None:
            return
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


def combined_usage(segments: list[Usage | None]) -> Usage | None:
    """Usage across continued segments: unknown if any segment's is unknown."""
    if not segments:
        return None
    if len(segments) == 1:
        return segments[0]
    if any(u is None or not u.known for u in segments):
        return Usage()
    known = [u for u in segments if u is not None]

    def total(name: str) -> int | None:
        values = [getattr(u, name) for u in known]
        return None if None in values else sum(values)

    return Usage(
        total("prompt_tokens"),
        total("completion_tokens"),
        total("total_tokens"),
        total("reasoning_tokens"),
        total("cached_tokens"),
        source="provider",
    )
