"""``Engine``: runs chat, stream, embed and OCR calls on configured lanes."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from laneway.cache.port import CacheStore
from laneway.core.clock import Clock
from laneway.core.errors import (
    LaneNotReady,
    RequestInvalid,
    UnknownLane,
)
from laneway.core.records import CallMeta, CallObserver, RecordPricer, no_prices
from laneway.core.redact import NO_SECRETS, Redactor
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
from laneway.engine.chat import LaneChat
from laneway.engine.embedding_cache import EmbeddingCache
from laneway.engine.fallback import (
    Chain,
    chain_not_ready,
    chain_of,
    ready_alone,
    through_chain,
)
from laneway.engine.lane import Lane
from laneway.engine.ocr import DEFAULT_PROMPT, ocr_request
from laneway.engine.parts import CallParts
from laneway.engine.recording import Recorder
from laneway.engine.response_cache import ResponseCache
from laneway.engine.settings import Routes
from laneway.engine.structured import DEFAULT_REASKS, M, StructuredResponse, structured
from laneway.policy.deadline import Deadline
from laneway.state.admission.base import SourceStore


class Engine:
    """The lanes of one configuration, the collaborators they share, and the call loop.

    The engine is given everything it uses, as ports: ``routes`` (aliases and
    each lane's fallback chain), ``lanes`` (sources bound to provider
    adapters), the ``transport`` that reaches upstreams (already
    redacting when the configuration has secrets), the source ``store``
    admission shares, the ``cache`` behind the response and embedding caches
    (failures read as misses), the ``observers`` of finished calls and the
    ``price`` of each. ``laneway.app`` makes them from a configuration; the
    engine names no concrete adapter. ``redactor`` holds the configuration's
    secrets, for the server's own redaction.
    """

    def __init__(
        self,
        routes: Routes,
        lanes: dict[str, Lane],
        *,
        transport: Transport,
        store: SourceStore,
        cache: CacheStore,
        clock: Clock,
        rng: random.Random | None = None,
        observers: Sequence[CallObserver] = (),
        price: RecordPricer = no_prices,
        redactor: Redactor = NO_SECRETS,
    ) -> None:
        self.routes = routes
        self.lanes = lanes
        self.redactor = redactor
        self.transport = transport
        self.clock = clock
        self.loop = CallLoop(clock, rng, store)
        self.recorder = Recorder(observers, clock, price)
        self.cache = cache
        self.responses = ResponseCache(cache, clock)
        self.parts = CallParts(transport, clock, self.loop, self.recorder, EmbeddingCache(cache))

    def lane(self, name: str, kind: str | None = None, *, ready: bool = True) -> Lane:
        """The lane called ``name`` or aliased by it (of ``kind`` when given), ready to run
        unless ``ready`` is false."""
        lane = self.lanes.get(self.routes.lane_of(name))
        if lane is None:
            raise UnknownLane(name, sorted(self.lanes), self.routes.aliases)
        if kind is not None and lane.kind != kind:
            raise RequestInvalid("model", f"lane {name!r} is of kind {lane.kind}, not {kind}")
        if ready and lane.problems:
            raise LaneNotReady(name, lane.problems)
        return lane

    def servable(self, name: str, kind: str | None = None) -> Lane:
        """The lane called ``name`` (or aliased by it), which it or a lane of its
        ``fallback_lanes`` can serve (``LaneNotReady`` naming every lane otherwise)."""
        lane = self.lane(name, kind, ready=False)
        if lane.problems:
            chain = chain_of(self.routes, self.lanes, lane)
            if all(other.problems for other in chain):
                raise chain_not_ready(chain)
        return lane

    def chain(self, name: str, kind: str, deadline: float | None, meta: CallMeta | None) -> Chain:
        """One call's walk from the lane ``name`` down its ``fallback_lanes``
        (``LaneNotReady`` when none of them can run)."""
        first = self.lane(name, kind, ready=False)
        return Chain.of(self.routes, self.lanes, first, self.clock, self.recorder, meta, deadline)

    def _fallbacks(
        self, first: Lane, deadline: float | None, meta: CallMeta | None
    ) -> Chain | None:
        """The chain a call on ``first`` walks; ``None`` when ``first`` has no fallback lanes
        and can run, so its call runs on it directly (``LaneNotReady`` when it cannot).

        A chain of one lane only adds a deadline and two coroutines to every call.
        """
        if not first.config.fallback_lanes:
            ready_alone(first)
            return None
        return Chain.of(self.routes, self.lanes, first, self.clock, self.recorder, meta, deadline)

    def deadline(self, lane: Lane, caller_seconds: float | None) -> Deadline:
        """The lane's deadline, tightened by the caller's own when that is shorter."""
        return self.parts.deadline(lane, caller_seconds)

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
        first = self.lane(lane_name, "chat", ready=False)
        chain = self._fallbacks(first, deadline, meta)
        if chain is None:
            return await self.run_chat(first, request, deadline=deadline, meta=meta, cache=cache)

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
        """A chat call on a resolved chat or OCR lane; answers ``accept`` refuses are not cached
        (``engine.chat``)."""
        call = LaneChat(self.parts, self.responses, lane, request, meta)
        return await call.run(deadline, accept, cache)

    def chat_stream(
        self,
        lane_name: str,
        request: ChatRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> ChatStream:
        """A streaming chat call on the lane and its fallback lanes; iterate it for chunks."""
        chain = self.chain(lane_name, "chat", deadline, meta)
        return ChatStream(self.parts, chain, request, meta)

    async def embed(
        self,
        lane_name: str,
        request: EmbedRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> EmbeddingResponse:
        """Embed every input in batches (see ``laneway.engine.embedding``), in input order.

        Every vector's length is checked against the lane's pin, in whatever
        encoding it travels: ``request.encoding`` (a relay's) keeps vectors in
        the caller's encoding, else they are Python floats. A library caller's
        ``encoding_format`` parameter is refused: ``encoding`` says it.
        """
        first = self.lane(lane_name, "embed", ready=False)
        chain = self._fallbacks(first, deadline, meta)
        if request.params.get("encoding_format", "float") != "float":
            raise RequestInvalid("encoding_format", "pass EmbedRequest.encoding instead")
        if chain is None:
            limit = self.deadline(first, deadline)
            return await embedding.embed(self.parts, first, request, limit, meta)

        async def on(lane: Lane, seconds: float | None) -> EmbeddingResponse:
            return await embedding.embed(
                self.parts, lane, request, self.deadline(lane, seconds), meta
            )

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
        """Read one image or PDF page on an OCR lane (see ``laneway.engine.ocr``).

        The lane's ``prompt`` and the document become a chat request that runs
        like any chat call: call loop, response cache, record, price.
        """
        lane = self.lane(lane_name, "ocr")
        request = ocr_request(lane.config.prompt or DEFAULT_PROMPT, document, mime_type)
        answer = await self.run_chat(lane, request, deadline=deadline, meta=meta, cache=cache)
        return OCRResponse(
            lane=answer.lane,
            source=answer.source,
            model=answer.model,
            text=answer.content,
            usage=answer.usage,
            attempts=answer.attempts,
            elapsed=answer.elapsed,
            cache=answer.cache,
            cost=answer.cost,
            cost_unknown=answer.cost_unknown,
        )

    async def structured(
        self,
        lane_name: str,
        request: ChatRequest,
        schema: type[M],
        *,
        reasks: int = DEFAULT_REASKS,
        strict: bool = False,
        deadline: float | None = None,
        meta: CallMeta | None = None,
    ) -> StructuredResponse[M]:
        """Ask ``lane_name`` for an instance of ``schema`` (see ``laneway.engine.structured``)."""
        lane = self.lane(lane_name, "chat")
        return await structured(
            self.run_chat,
            self.clock,
            lane,
            request,
            schema,
            reasks=reasks,
            strict=strict,
            deadline=self.deadline(lane, deadline),
            meta=meta,
        )

    async def aclose(self) -> None:
        """Release the transport's connections and the cache's."""
        await self.transport.aclose()
        await self.loop.admission.aclose()
        await self.cache.aclose()
