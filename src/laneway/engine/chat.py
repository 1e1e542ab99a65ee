"""``LaneChat``: one non-streamed chat call on a resolved lane, from its response cache or
through the call loop, recorded and priced once.

The engine's ``chat`` walks the lane's fallback chain and runs one of these
per lane; structured asks and OCR run it on their lane directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from laneway.core.errors import AttemptFailure
from laneway.core.estimate import chat_usage_or_estimate
from laneway.core.failures import FailureKind
from laneway.core.records import CallMeta
from laneway.core.results import ChatResult
from laneway.core.types import CacheControl, ChatRequest, LLMResponse
from laneway.engine.callstate import CallOutcome
from laneway.engine.lane import Lane, Source
from laneway.engine.parts import CallParts
from laneway.engine.recording import CallClock
from laneway.engine.response_cache import CacheLookup, ResponseCache
from laneway.policy.quota import request_tokens


class LaneChat:
    """``request`` on ``lane``, for ``meta``'s caller, over the engine's ``parts``."""

    __slots__ = ("lane", "meta", "parts", "request", "responses")

    def __init__(
        self,
        parts: CallParts,
        responses: ResponseCache,
        lane: Lane,
        request: ChatRequest,
        meta: CallMeta | None,
    ) -> None:
        self.parts = parts
        self.responses = responses
        self.lane = lane
        self.request = request
        self.meta = meta

    async def run(
        self,
        deadline: float | None,
        accept: Callable[[LLMResponse], bool] | None,
        cache: CacheControl | None,
    ) -> LLMResponse:
        """The answer (a cache hit, or the loop's), recorded; ``accept`` refusing it keeps it
        out of the response cache."""
        lane, request, recorder = self.lane, self.request, self.parts.recorder
        lane.refuse_inexpressible(request, stream=False)
        started = recorder.start()
        lookup = await self.responses.lookup(lane, request, cache)
        if lookup.hit is not None:
            return self._hit(started, lookup.hit)
        with recorder.failures(lane, started, self.meta):
            done = await self.parts.loop.run(
                lane,
                self.parts.deadline(lane, deadline),
                self._attempt,
                request_tokens=request_tokens(request),
            )
        response = self._answer(started, done, lookup)
        if accept is None or accept(response):
            await self.responses.save(lookup, response)
        return response

    async def _attempt(self, source: Source) -> ChatResult:
        """One attempt on ``source``; an empty completion fails it when the lane retries those."""
        http = source.provider.chat_request(self.request, stream=False)
        answer = await self.parts.transport.send(http)
        result = source.provider.parse_chat(answer, self.parts.clock.wall())
        if result.empty and FailureKind.EMPTY in self.lane.policy.retry_on:
            raise AttemptFailure(FailureKind.EMPTY, "the upstream returned an empty completion")
        return result

    def _answer(
        self, started: CallClock, done: CallOutcome[ChatResult], lookup: CacheLookup
    ) -> LLMResponse:
        """The loop's winning result as the caller's answer, recorded and priced."""
        lane, r = self.lane, done.result
        usage = chat_usage_or_estimate(
            r.usage,
            lane.config.estimate_missing_usage,
            self.request.messages,
            r.content,
            r.reasoning_content,
        )
        cost, cost_unknown = self.parts.recorder.ok(
            lane,
            started,
            self.meta,
            source=done.source.name,
            model=r.model,
            usage=usage,
            attempts=done.attempts,
            status=200,
            cache=lookup.status,
        )
        return LLMResponse(
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
            cost=cost,
            cost_unknown=cost_unknown,
            answer_body=r.body,
        )

    def _hit(self, started: CallClock, hit: LLMResponse) -> LLMResponse:
        """Record a cache hit (no attempts, the cached usage, ``cache="hit"``); the hit, priced."""
        fields = {"source": hit.source, "model": hit.model, "usage": hit.usage, "status": 200}
        recorder = self.parts.recorder
        cost, cost_unknown = recorder.ok(self.lane, started, self.meta, cache="hit", **fields)
        return dataclasses.replace(hit, cost=cost, cost_unknown=cost_unknown)
