"""``Engine``: runs chat, stream and embed calls on configured lanes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

from laneway.config.models import LanewayConfig
from laneway.core.clock import Clock, SystemClock
from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    LaneNotReady,
    RequestInvalid,
    UnknownLane,
)
from laneway.core.records import CallMeta, CallObserver
from laneway.core.transport import Transport
from laneway.core.types import ChatRequest, EmbeddingResponse, EmbedRequest, LLMResponse
from laneway.engine.call import CallLoop
from laneway.engine.lane import Lane, Source, build_lane
from laneway.engine.recording import Recorder
from laneway.engine.stream import ChatStream
from laneway.policy.deadline import Deadline
from laneway.providers.base import ChatResult, EmbedResult


class Engine:
    """The lanes of one configuration, a shared transport, and the call loop."""

    def __init__(
        self,
        config: LanewayConfig,
        environ: Mapping[str, str],
        transport: Transport,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        observers: Sequence[CallObserver] = (),
    ) -> None:
        self.config = config
        self.transport = transport
        self.clock = clock or SystemClock()
        self.loop = CallLoop(self.clock, rng)
        self.recorder = Recorder(observers, self.clock)
        self.lanes: dict[str, Lane] = {
            name: build_lane(name, lane, environ) for name, lane in config.lanes.items()
        }

    def lane(self, name: str, kind: str | None = None) -> Lane:
        """The lane called ``name``, ready to run (and of ``kind`` when given)."""
        lane = self.lanes.get(name)
        if lane is None:
            raise UnknownLane(name, sorted(self.lanes))
        if kind is not None and lane.kind != kind:
            raise RequestInvalid("model", f"lane {name!r} is a {lane.kind} lane, not {kind}")
        if lane.problems:
            raise LaneNotReady(name, lane.problems)
        return lane

    def deadline(self, lane: Lane, caller_seconds: float | None) -> Deadline:
        """The lane's deadline, tightened by the caller's own when that is shorter."""
        now = self.clock.now()
        own = Deadline.after(now, lane.config.deadline)
        if caller_seconds is None:
            return own
        return own.earliest(Deadline.after(now, caller_seconds))

    async def chat(
        self,
        lane_name: str,
        request: ChatRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> LLMResponse:
        """One non-streaming chat call under the lane's policy."""
        lane = self.lane(lane_name, "chat")
        started = self.recorder.start()
        wants_empty_retry = "empty" in lane.policy.retry_on

        async def attempt(source: Source) -> ChatResult:
            http = source.provider.chat_request(request, stream=False)
            answer = await self.transport.send(http)
            result = source.provider.parse_chat(answer, self.clock.wall())
            if wants_empty_retry and result.empty:
                raise AttemptFailure("empty", "the upstream returned an empty completion")
            return result

        try:
            done = await self.loop.run(lane, self.deadline(lane, deadline), attempt)
        except (CallFailed, asyncio.CancelledError) as exc:
            self.recorder.failed(lane, started, meta, exc)
            raise
        r = done.result
        self.recorder.ok(
            lane,
            started,
            meta,
            source=done.source.name,
            model=r.model,
            usage=r.usage,
            attempts=done.attempts,
            status=200,
        )
        return LLMResponse(
            lane=lane.name,
            source=done.source.name,
            model=r.model,
            content=r.content,
            usage=r.usage,
            attempts=done.attempts,
            elapsed=done.elapsed,
            finish_reason=r.finish_reason,
            reasoning_content=r.reasoning_content,
            reasoning=r.reasoning,
            raw=r.raw,
        )

    def chat_stream(
        self,
        lane_name: str,
        request: ChatRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> ChatStream:
        """A streaming chat call; iterate the result for chunks."""
        lane = self.lane(lane_name, "chat")
        return ChatStream(self, lane, request, self.deadline(lane, deadline), meta)

    async def embed(
        self,
        lane_name: str,
        request: EmbedRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> EmbeddingResponse:
        """Embed every input; each vector is checked against the lane's pinned length."""
        lane = self.lane(lane_name, "embed")
        started = self.recorder.start()
        pinned = lane.config.dimensions
        if pinned is not None and request.dimensions not in (None, pinned):
            raise RequestInvalid("dimensions", f"lane {lane.name} is pinned to {pinned}")
        request = pin_dimensions(request, pinned)

        async def attempt(source: Source) -> EmbedResult:
            answer = await self.transport.send(source.provider.embed_request(request))
            result = source.provider.parse_embed(answer, self.clock.wall())
            check_vectors(result, len(request.inputs), pinned)
            return result

        try:
            done = await self.loop.run(lane, self.deadline(lane, deadline), attempt)
        except (CallFailed, asyncio.CancelledError) as exc:
            self.recorder.failed(lane, started, meta, exc)
            raise
        r = done.result
        self.recorder.ok(
            lane,
            started,
            meta,
            source=done.source.name,
            model=r.model,
            usage=r.usage,
            attempts=done.attempts,
            status=200,
            embedding_dim=len(r.vectors[0]) if r.vectors else None,
        )
        return EmbeddingResponse(
            lane=lane.name,
            source=done.source.name,
            model=r.model,
            vectors=r.vectors,
            usage=r.usage,
            attempts=done.attempts,
            elapsed=done.elapsed,
        )

    async def aclose(self) -> None:
        """Release the transport's connections."""
        await self.transport.aclose()


def pin_dimensions(request: EmbedRequest, pinned: int | None) -> EmbedRequest:
    """The request with the lane's pinned dimensions filled in."""
    if pinned is None or request.dimensions == pinned:
        return request
    return EmbedRequest(request.inputs, pinned, request.params)


def check_vectors(result: EmbedResult, expected_count: int, pinned: int | None) -> None:
    """Refuse an answer whose vector count or lengths are wrong: it would corrupt a corpus."""
    if len(result.vectors) != expected_count:
        raise AttemptFailure(
            "malformed", f"sent {expected_count} inputs, got {len(result.vectors)} vectors"
        )
    if pinned is None:
        return
    for index, vector in enumerate(result.vectors):
        if len(vector) != pinned:
            raise AttemptFailure(
                "dimension",
                f"embedding {index} has length {len(vector)}, expected {pinned} (dimensions pin)",
            )


def chat_request(messages: Any, params: Mapping[str, Any]) -> ChatRequest:
    """Validate caller messages into a ``ChatRequest`` (errors name the field)."""
    if not isinstance(messages, list) or not messages:
        raise RequestInvalid("messages", "must be a non-empty list")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestInvalid(f"messages[{index}]", "must be an object with a string 'role'")
    return ChatRequest(messages, dict(params))
