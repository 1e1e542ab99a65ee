"""The chat response cache: an identical request is answered again without a call.

Exact match only: the key is a hash of the lane, its sources' models, the
messages and every parameter (JSON with sorted keys, so key order does not
matter), so any difference is a miss. Only a lane that declares ``cache:``
caches: every request (``when: always``) or those with ``temperature: 0``
(``when: temperature0``). A caller can say no per request:
``no-store`` neither reads nor keeps (``bypass``), ``no-cache`` skips the
read and keeps the fresh answer (``refresh``). Only answers worth repeating are kept:
never errors (they never reach the cache), never empty completions, never
results a caller's check refused (``Engine.run_chat``'s ``check``).

A hit is recorded like any call, with ``cache="hit"``, no attempts and the
usage the original call reported, so accounting can price it at zero while
the tokens it saved stay visible.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from laneway.cache.port import CacheStore
from laneway.core.clock import TimeSource
from laneway.core.types import CacheControl, CacheStatus, ChatRequest, LLMResponse, Reasoning, Usage
from laneway.engine.lane import Lane
from laneway.engine.settings import ResponseCacheSettings

NOT_SEMANTIC = frozenset({"stream", "stream_options"})
"""Parameters that change how an answer is delivered, not what it says."""
FORMAT = 1
"""Version of the stored form; entries of another version read as misses."""


@dataclass(frozen=True, slots=True)
class CacheLookup:
    """What the cache said about one request: its key, the status, and a hit."""

    key: str | None
    status: CacheStatus
    hit: LLMResponse | None = None
    ttl: float = 0.0


BYPASS = CacheLookup(None, "bypass")


class ResponseCache:
    """Chat answers of every lane, in one store (see the module doc)."""

    def __init__(self, store: CacheStore, clock: TimeSource) -> None:
        self.store = store
        self.clock = clock

    async def lookup(
        self, lane: Lane, request: ChatRequest, control: CacheControl | None = None
    ) -> CacheLookup:
        """The cached answer to ``request``, or a miss (or refresh) to fill, or a bypass."""
        cache = lane.config.cache
        if cache is None or control == "no-store" or not wants_cache(cache, request):
            return BYPASS
        key = request_key(lane, request)
        if key is None:
            return BYPASS
        if control == "no-cache":
            return CacheLookup(key, "refresh", None, cache.ttl)
        started = self.clock.now()
        (value,) = await self.store.get_many([key])
        hit = decode_response(lane.name, value, self.clock.now() - started)
        return CacheLookup(key, "hit" if hit is not None else "miss", hit, cache.ttl)

    async def save(self, lookup: CacheLookup, response: LLMResponse) -> None:
        """Keep ``response`` for a missed or refreshed lookup, unless it is empty."""
        if lookup.key is None or lookup.status not in ("miss", "refresh") or is_empty(response):
            return
        await self.store.put_many({lookup.key: encode_response(response)}, lookup.ttl)


def wants_cache(cache: ResponseCacheSettings, request: ChatRequest) -> bool:
    """Whether the lane's declared cache covers ``request`` (its ``when``)."""
    if cache.when == "temperature0":
        temperature = request.params.get("temperature")
        return type(temperature) in (int, float) and temperature == 0
    return True


def request_key(lane: Lane, request: ChatRequest) -> str | None:
    """``chat:<lane>:<sha256>`` of the request; ``None`` if it cannot be hashed."""
    params = {k: v for k, v in request.params.items() if k not in NOT_SEMANTIC}
    models = [source.config.model for source in lane.sources]
    try:
        body = orjson.dumps(
            [FORMAT, lane.name, models, request.messages, params], option=orjson.OPT_SORT_KEYS
        )
    except TypeError:
        return None
    return f"chat:{lane.name}:{hashlib.sha256(body).hexdigest()}"


def is_empty(response: LLMResponse) -> bool:
    """No content and no tool calls: nothing worth repeating."""
    if response.content:
        return False
    choices = response.raw.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    message = first.get("message") if isinstance(first, dict) else None
    return not (isinstance(message, dict) and message.get("tool_calls"))


def encode_response(response: LLMResponse) -> bytes:
    """The parts of an answer a hit gives back (not its attempts or timing)."""
    return orjson.dumps(
        {
            "format": FORMAT,
            "source": response.source,
            "model": response.model,
            "content": response.content,
            "usage": dataclasses.asdict(response.usage),
            "finish_reason": response.finish_reason,
            "reasoning_content": response.reasoning_content,
            "reasoning": response.reasoning.value,
            "raw": response.raw,
        }
    )


def decode_response(lane: str, value: bytes | None, elapsed: float) -> LLMResponse | None:
    """A stored answer as a hit on ``lane``; ``None`` for no entry or an unreadable one."""
    if value is None:
        return None
    try:
        data: dict[str, Any] = orjson.loads(value)
        if data.get("format") != FORMAT:
            return None
        return LLMResponse(
            lane=lane,
            source=data["source"],
            model=data["model"],
            content=data["content"],
            usage=Usage(**data["usage"]),
            attempts=(),
            elapsed=elapsed,
            finish_reason=data["finish_reason"],
            reasoning_content=data["reasoning_content"],
            reasoning=Reasoning(data["reasoning"]),
            raw=data["raw"],
            cache="hit",
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None
