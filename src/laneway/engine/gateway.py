"""``Engine``: runs chat, stream, embed and OCR calls on configured lanes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from laneway.accounting.estimate import chat_usage_or_estimate
from laneway.cache import CacheStore, GuardedCache, open_cache
from laneway.clocks import SystemClock
from laneway.config.models import LanewayConfig
from laneway.config.secrets import redactor_for
from laneway.core.clock import Clock
from laneway.core.errors import (
    AttemptFailure,
    CallFailed,
    LaneNotReady,
    RequestInvalid,
    UnknownLane,
)
from laneway.core.failures import FailureKind
from laneway.core.records import CallMeta, CallObserver
from laneway.core.shapes import check_messages
from laneway.core.transport import Transport
from laneway.core.types import (
    CacheControl,
    ChatRequest,
    EmbeddingResponse,
    EmbedRequest,
    LLMResponse,
    OCRResponse,
)
from laneway.engine import embedding
from laneway.engine.call import CallLoop
from laneway.engine.chain_stream import ChatStream
from laneway.engine.embedding_cache import EmbeddingCache
from laneway.engine.fallback import Chain, through_chain
from laneway.engine.lane import Lane, Source, build_lanes
from laneway.engine.ocr import run_ocr
from laneway.engine.recording import CallClock, Recorder
from laneway.engine.redaction import RedactingTransport
from laneway.engine.response_cache import ResponseCache
from laneway.policy.deadline import Deadline
from laneway.policy.quota import estimate_tokens
from laneway.providers.base import ChatResult
from laneway.state import open_store


class Engine:
    """The lanes of one configuration, a shared transport, and the call loop.

    ``redactor`` holds the configuration's secrets; when there are any, the
    transport is wrapped so no upstream text carrying one gets further
    (``laneway.engine.redaction``).

    ``cache`` stores the response and embedding caches (default: the one
    ``cache.url`` names, relative paths from the working directory); its
    failures read as misses.
    """

    def __init__(
        self,
        config: LanewayConfig,
        environ: Mapping[str, str],
        transport: Transport,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        observers: Sequence[CallObserver] = (),
        cache: CacheStore | None = None,
    ) -> None:
        self.config = config
        self.redactor = redactor_for(config, environ)
        self.transport: Transport = (
            RedactingTransport(transport, self.redactor) if self.redactor.active else transport
        )
        self.clock = clock or SystemClock()
        state = open_store(config.state.url, self.clock, config.state.fallback_share)
        self.loop = CallLoop(self.clock, rng, state)
        self.recorder = Recorder(observers, self.clock)
        self.cache = GuardedCache(cache or open_cache(config.cache.url, None), self.clock)
        self.responses = ResponseCache(self.cache, self.clock)
        self.embedding_cache = EmbeddingCache(self.cache)
        self.lanes: dict[str, Lane] = build_lanes(config, environ)

    def lane(self, name: str, kind: str | None = None, *, ready: bool = True) -> Lane:
        """The lane called ``name`` or aliased by it (of ``kind`` when given), ready to run
        unless ``ready`` is false."""
        lane = self.lanes.get(self.config.lane_of(name))
        if lane is None:
            raise UnknownLane(name, sorted(self.lanes), self.config.aliases)
        if kind is not None and lane.kind != kind:
            raise RequestInvalid("model", f"lane {name!r} is a {lane.kind} lane, not {kind}")
        if ready and lane.problems:
            raise LaneNotReady(name, lane.problems)
        return lane

    def chain(self, name: str, kind: str, deadline: float | None, meta: CallMeta | None) -> Chain:
        """One call's walk from the lane ``name`` down its ``fallback_lanes``
        (``LaneNotReady`` when none of them can run)."""
        first = self.lane(name, kind, ready=False)
        return Chain.of(self.config, self.lanes, first, self.clock, self.recorder, meta, deadline)

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
        cache: CacheControl | None = None,
    ) -> LLMResponse:
        """One non-streaming chat call under the lane's policy (or from its response cache).

        ``cache`` is the caller's say over the response cache (``no-cache``, ``no-store``).
        """
        chain = self.chain(lane_name, "chat", deadline, meta)

        async def on(lane: Lane, seconds: float | None) -> LLMResponse:
            return await self.run_chat(lane, request, deadline=seconds, meta=meta, cache=cache)

        return await through_chain(chain, on)

    async def run_chat(
        self,
        lane: Lane,
        request: ChatRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
        accept: Callable[[LLMResponse], bool] | None = None,
        cache: CacheControl | None = None,
    ) -> LLMResponse:
        """A chat call on a resolved chat or OCR lane; answers ``accept`` refuses are not cached."""
        lane.refuse_inexpressible(request, stream=False)
        started = self.recorder.start()
        lookup = await self.responses.lookup(lane, request, cache)
        if lookup.hit is not None:
            self._record_hit(lane, started, meta, lookup.hit)
            return lookup.hit
        wants_empty_retry = FailureKind.EMPTY in lane.policy.retry_on

        async def attempt(source: Source) -> ChatResult:
            http = source.provider.chat_request(request, stream=False)
            answer = await self.transport.send(http)
            result = source.provider.parse_chat(answer, self.clock.wall())
            if wants_empty_retry and result.empty:
                raise AttemptFailure(FailureKind.EMPTY, "the upstream returned an empty completion")
            return result

        try:
            done = await self.loop.run(
                lane,
                self.deadline(lane, deadline),
                attempt,
                request_tokens=estimate_tokens(request),
            )
        except (CallFailed, asyncio.CancelledError) as exc:
            self.recorder.failed(lane, started, meta, exc)
            raise
        r = done.result
        usage = chat_usage_or_estimate(
            r.usage,
            lane.config.estimate_missing_usage,
            request.messages,
            r.content,
            r.reasoning_content,
        )
        self.recorder.ok(
            lane,
            started,
            meta,
            source=done.source.name,
            model=r.model,
            usage=usage,
            attempts=done.attempts,
            status=200,
            cache=lookup.status,
        )
        response = LLMResponse(
            lane=lane.name,
            source=done.source.name,
            model=r.model,
            content=r.content,
            usage=usage,
            attempts=done.attempts,
            elapsed=done.elapsed,
            finish_reason=r.finish_reason,
            reasoning_content=r.reasoning_content,
            reasoning=r.reasoning,
            raw=r.raw,
            cache=lookup.status,
        )
        if accept is None or accept(response):
            await self.responses.save(lookup, response)
        return response

    def _record_hit(
        self, lane: Lane, started: CallClock, meta: CallMeta | None, hit: LLMResponse
    ) -> None:
        """Record a cache hit: no attempts, the cached usage, ``cache="hit"``."""
        fields = {"source": hit.source, "model": hit.model, "usage": hit.usage, "status": 200}
        self.recorder.ok(lane, started, meta, cache="hit", **fields)

    def chat_stream(
        self,
        lane_name: str,
        request: ChatRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> ChatStream:
        """A streaming chat call on the lane and its fallback lanes; iterate it for chunks."""
        return ChatStream(self, self.chain(lane_name, "chat", deadline, meta), request, meta)

    async def embed(
        self,
        lane_name: str,
        request: EmbedRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> EmbeddingResponse:
        """Embed every input in batches (see ``laneway.engine.embedding``), in input order.

        Vectors are always asked for as floats: their lengths are checked against
        the lane's pin, which an encoded string would hide.
        """
        chain = self.chain(lane_name, "embed", deadline, meta)
        if request.params.get("encoding_format", "float") != "float":
            raise RequestInvalid("encoding_format", "laneway returns float vectors only")

        async def on(lane: Lane, seconds: float | None) -> EmbeddingResponse:
            return await embedding.embed(self, lane, request, self.deadline(lane, seconds), meta)

        return await through_chain(chain, on)

    async def ocr(
        self,
        lane_name: str,
        document: bytes,
        *,
        mime_type: str | None = None,
        deadline: float | None = None,
        meta: CallMeta | None = None,
        cache: CacheControl | None = None,
    ) -> OCRResponse:
        """Read one image or PDF page on an OCR lane (see ``laneway.engine.ocr``)."""
        return await run_ocr(
            self,
            lane_name,
            document,
            mime_type=mime_type,
            deadline=deadline,
            meta=meta,
            cache=cache,
        )

    async def aclose(self) -> None:
        """Release the transport's connections and the cache's."""
        await self.transport.aclose()
        await self.loop.admission.aclose()
        await self.cache.aclose()


def chat_request(
    messages: Any, params: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> ChatRequest:
    """Validate caller messages into a ``ChatRequest`` (errors name the field)."""
    return ChatRequest(check_messages(messages), dict(params), headers or {})
