"""One call of a batch job: the engine call for a batch of texts or one chat item.

A call's outcome is never raised: an error the call ends with becomes a
failed result for each of its items, except a deadline spent entirely at the
admission gate (no attempt made), which the job queues again (``gate_bound``).
Cost is priced per call at the rate of the source that answered; a response
served from a cache cost nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from laneway.accounting.cost import CACHE_HIT, Cost, cost_of
from laneway.accounting.rates import Rate
from laneway.batch.items import Item
from laneway.batch.results import ItemError, ItemResult
from laneway.core.errors import CallFailed, DeadlineExceeded, RequestInvalid
from laneway.core.failures import FailureKind
from laneway.core.shapes import chat_request
from laneway.core.types import Attempt, CacheStatus, EmbedRequest, Usage
from laneway.engine.gateway import Engine
from laneway.engine.lane import Lane
from laneway.policy.outcome import Verdict


class RateSource(Protocol):
    """Prices by (lane, source, time): ``laneway.accounting.Pricer`` has this shape."""

    def rate(self, lane: str, source: str | None, when: float) -> Rate | None: ...


@dataclass(frozen=True, slots=True)
class Work:
    """One call to make: its number and the items it carries."""

    call: int
    items: list[Item]
    retry: bool = False


@dataclass(frozen=True, slots=True)
class Ended:
    """A call that ended: its results, its attempts, or a gate wait to queue again."""

    results: list[ItemResult]
    attempts: tuple[Attempt, ...]
    gate_bound: CallFailed | None = None


class CallMaker:
    """Makes a job's calls on one lane with the job's parameters, schema and prices."""

    def __init__(
        self,
        engine: Engine,
        lane: Lane,
        prices: RateSource,
        params: Mapping[str, Any],
        schema: type[BaseModel] | None,
        reasks: int,
    ) -> None:
        self.engine = engine
        self.lane = lane
        self.prices = prices
        self.params = params
        self.schema = schema
        self.reasks = reasks

    async def run(self, work: Work) -> Ended:
        """Make the call ``work`` describes; an error ends it as failed items, not a raise."""
        try:
            if self.lane.kind == "embed":
                return await self._embed(work)
            return await self._chat(work)
        except DeadlineExceeded as exc:
            if exc.attempts:
                return all_failed(work, exc)
            return Ended([], (), gate_bound=exc)
        except (CallFailed, RequestInvalid) as exc:
            return all_failed(work, exc)

    async def _embed(self, work: Work) -> Ended:
        texts = [str(item.payload) for item in work.items]
        response = await self.engine.embed(self.lane.name, EmbedRequest(texts))
        cost = self._cost(response.source, response.usage, response.cache)
        results = [
            ItemResult(
                item.index, item.id, work.call, vector, response.source, len(response.attempts)
            )
            for item, vector in zip(work.items, response.vectors, strict=True)
        ]
        results[0].usage, results[0].cost = response.usage, cost
        return Ended(results, response.attempts)

    async def _chat(self, work: Work) -> Ended:
        (item,) = work.items
        assert isinstance(item.payload, dict)
        payload = dict(item.payload)
        messages = payload.pop("messages")
        request = chat_request(messages, {**self.params, **payload})
        schema = self.schema
        output: dict[str, Any]
        if schema is None:
            reply = await self.engine.chat(self.lane.name, request)
            source, attempts, usage, cache = reply.source, reply.attempts, reply.usage, reply.cache
            output = {"message": _message(reply.content), "finish_reason": reply.finish_reason}
        else:
            answer = await self.engine.structured(
                self.lane.name, request, schema, reasks=self.reasks
            )
            source, attempts, usage, cache = (
                answer.source,
                answer.attempts,
                answer.usage,
                answer.cache,
            )
            value = answer.value.model_dump(mode="json")
            output = {"message": _message(answer.content), "value": value, "asks": answer.asks}
        cost = self._cost(source, usage, cache)
        result = ItemResult(
            item.index, item.id, work.call, output, source, len(attempts), usage, cost
        )
        return Ended([result], attempts)

    def _cost(self, source: str, usage: Usage, cache: CacheStatus) -> Cost:
        if cache == "hit":
            return CACHE_HIT
        rate = self.prices.rate(self.lane.name, source, time.time())
        return cost_of(usage, rate, self.lane.kind)


def verdict(attempts: Sequence[Attempt]) -> Verdict:
    """What a call's attempts say about load: throttled (429, Retry-After), timed out, or fine."""
    if any(a.status == 429 or a.pushback for a in attempts):
        return Verdict.THROTTLED
    if any(a.outcome == FailureKind.TIMEOUT for a in attempts):
        return Verdict.TIMED_OUT
    return Verdict.OK


def _message(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}


def failed(item: Item, call: int, exc: CallFailed | RequestInvalid) -> ItemResult:
    """``item`` failed with ``exc``."""
    return ItemResult(item.index, item.id, call, error=ItemError.of(exc))


def all_failed(work: Work, exc: CallFailed | RequestInvalid) -> Ended:
    """Every item of ``work`` failed with ``exc``."""
    attempts = exc.attempts if isinstance(exc, CallFailed) else ()
    return Ended([failed(item, work.call, exc) for item in work.items], attempts)
