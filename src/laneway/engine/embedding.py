"""Embeddings that cannot corrupt a corpus: checked, batched, size-capped, cached per item.

A large input is split into upstream batches of at most ``max_batch_items``
items, fewer when the answer would not fit ``max_response_bytes`` at the
pinned vector length, because a batched answer over a buffer limit is what
fails whole indexing runs. The transport stops reading at that limit, so an
answer that still passes it fails as ``ResponseTooLarge`` naming the limit.
Batches run ``batch_concurrency`` at a time under the call's one deadline,
by ``run_bounded``'s rules (``laneway.engine.bounded``, the same as
``laneway.gather_bounded``): the first failure cancels the rest and is raised
as itself (no partial result is returned: a corpus with holes is a corrupt
corpus). Vectors are reassembled in input order;
every vector's length is checked against the pin, and all vectors of one
answer must share a length. A relay's request names the ``encoding`` its
caller wants: vectors then stay in it from the upstream's answer to the
caller (``laneway.core.vectors``), and lengths are counted without decoding.

Usage is summed over the batches sent upstream; one batch without usage
makes the total unknown (``laneway.core.usage``). Items found in the
per-item cache are not sent at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from laneway.core.errors import (
    AttemptFailure,
    DimensionMismatch,
    RequestInvalid,
    ResponseTooLarge,
    UpstreamFailed,
)
from laneway.core.estimate import embed_usage_or_estimate
from laneway.core.failures import FailureKind
from laneway.core.records import CallMeta
from laneway.core.results import EmbedResult
from laneway.core.types import Attempt, CacheStatus, EmbeddingResponse, EmbedRequest, Usage
from laneway.core.usage import sum_usage
from laneway.core.vectors import Vector, conformed, encoded, floats, vector_length
from laneway.engine.bounded import run_bounded
from laneway.engine.recording import CallClock
from laneway.engine.settings import LaneSettings
from laneway.policy.deadline import Deadline
from laneway.policy.quota import request_tokens

if TYPE_CHECKING:
    from laneway.engine.lane import Lane, Source
    from laneway.engine.parts import CallParts

BYTES_PER_FLOAT = 24
"""Room one float takes in an answer's JSON: 17 digits, sign, exponent, separator."""
BYTES_PER_ITEM = 64
"""Room each item's envelope takes (``{"object":"embedding","index":N,"embedding":[]}``)."""
CACHE_SOURCE = "cache"
"""The ``source`` of an answer served entirely from the per-item cache."""


@dataclass(frozen=True, slots=True)
class BatchDone:
    """One upstream batch that succeeded: which inputs it covered and what it cost."""

    indices: list[int]
    result: EmbedResult
    usage: Usage
    source: str
    attempts: tuple[Attempt, ...]
    queue_wait: float


async def embed(
    parts: CallParts, lane: Lane, request: EmbedRequest, deadline: Deadline, meta: CallMeta | None
) -> EmbeddingResponse:
    """Embed every input of ``request`` on ``lane``; one call record for the whole call."""
    if not request.inputs:
        raise RequestInvalid("input", "must hold at least one text")
    request = pin_dimensions(request, lane.config.dimensions)
    started = parts.recorder.start()
    with parts.recorder.failures(lane, started, meta):
        return await _embed(parts, lane, request, deadline, meta, started)


async def _embed(
    parts: CallParts,
    lane: Lane,
    request: EmbedRequest,
    deadline: Deadline,
    meta: CallMeta | None,
    started: CallClock,
) -> EmbeddingResponse:
    cache = parts.embedding_cache if lane.config.embed_cache else None
    texts, dims = request.inputs, request.dimensions
    found = await cache.lookup(lane, dims, texts) if cache else [None] * len(texts)
    cached = [None if v is None else conformed(v, request.encoding) for v in found]
    misses = [index for index, vector in enumerate(cached) if vector is None]
    batches = split(misses, batch_size(lane.config, dims))
    jobs = [_batch_job(parts, lane, request, batch, deadline) for batch in batches]
    done = await run_bounded(jobs, lane.config.batch_concurrency)
    vectors = vectors_in_order(cached, done)
    attempts = tuple(attempt for batch in done for attempt in batch.attempts)
    check_one_length(lane, vectors, attempts, parts.clock.now() - started.mono, deadline)
    if cache is not None and done:
        sent = [index for batch in done for index in batch.indices]
        await cache.save(lane, dims, [texts[i] for i in sent], [floats(vectors[i]) for i in sent])
    status: CacheStatus = "bypass" if cache is None else ("miss" if done else "hit")
    source = done[0].source if done else CACHE_SOURCE
    model = done[0].result.model if done else lane.sources[0].config.model
    usage = sum_usage(batch.usage for batch in done)
    cost, cost_unknown = parts.recorder.ok(
        lane,
        started,
        meta,
        source=source if done else None,
        model=model,
        usage=usage,
        attempts=attempts,
        status=200,
        embedding_dim=vector_length(vectors[0]) if vectors else None,
        queue_wait=max((batch.queue_wait for batch in done), default=0.0),
        cache=status,
    )
    elapsed = parts.clock.now() - started.mono
    response = EmbeddingResponse(
        lane.name, source, model, [], usage, attempts, elapsed, status, cost, cost_unknown
    )
    if request.encoding is None:
        response.vectors = [floats(vector) for vector in vectors]
    else:
        response.encoded = [encoded(vector, request.encoding) for vector in vectors]
        if len(done) == 1 and len(done[0].indices) == len(texts):
            response.answer_body = done[0].result.body
    return response


def _batch_job(
    parts: CallParts, lane: Lane, request: EmbedRequest, indices: list[int], deadline: Deadline
) -> Callable[[], Awaitable[BatchDone]]:
    """One upstream batch as a job: the call loop over ``request``'s ``indices``."""
    batch = dataclasses.replace(request, inputs=[request.inputs[i] for i in indices])
    limit = lane.config.max_response_bytes

    async def attempt(source: Source) -> EmbedResult:
        http = dataclasses.replace(source.provider.embed_request(batch), max_bytes=limit)
        answer = await parts.transport.send(http)
        result = source.provider.parse_embed(answer, parts.clock.wall(), batch.encoding)
        check_vectors(result, len(batch.inputs), lane.config.dimensions)
        result.vectors = [conformed(vector, batch.encoding) for vector in result.vectors]
        return result

    async def job() -> BatchDone:
        try:
            done = await parts.loop.run(
                lane, deadline, attempt, request_tokens=request_tokens(batch)
            )
        except UpstreamFailed as exc:
            too_large = as_too_large(exc, limit)
            if too_large is None:
                raise
            raise too_large from exc
        r = done.result
        usage = embed_usage_or_estimate(r.usage, lane.config.estimate_missing_usage, batch.inputs)
        return BatchDone(indices, r, usage, done.source.name, done.attempts, done.queue_wait)

    return job


def batch_size(config: LaneSettings, dimensions: int | None) -> int:
    """Items per upstream batch: ``max_batch_items``, fewer if the answer would not fit.

    The fit is judged at the pinned length with a generous size per float, so
    a batch is never planned over ``max_response_bytes``; without a pin only
    ``max_batch_items`` applies and the transport's limit is the guard.
    """
    if dimensions is None:
        return config.max_batch_items
    per_item = dimensions * BYTES_PER_FLOAT + BYTES_PER_ITEM
    return max(1, min(config.max_batch_items, config.max_response_bytes // per_item))


def split(indices: Sequence[int], size: int) -> list[list[int]]:
    """``indices`` in consecutive runs of at most ``size``."""
    return [list(indices[start : start + size]) for start in range(0, len(indices), size)]


def vectors_in_order(cached: Sequence[Vector | None], done: Sequence[BatchDone]) -> list[Vector]:
    """Every input's vector in input order: cached ones, then each batch's in place."""
    filled = list(cached)
    for batch in done:
        for index, vector in zip(batch.indices, batch.result.vectors, strict=True):
            filled[index] = vector
    missing = [index for index, vector in enumerate(filled) if vector is None]
    if missing:
        raise RuntimeError(f"inputs {missing} were left without a vector")
    return cast(list[Vector], filled)


def as_too_large(exc: UpstreamFailed, limit: int) -> ResponseTooLarge | None:
    """``exc`` as ``ResponseTooLarge`` when it ended on an answer over ``limit``, else ``None``."""
    last = exc.attempts[-1] if exc.attempts else None
    if last is None or last.outcome != FailureKind.TOO_LARGE:
        return None
    return ResponseTooLarge(
        f"lane {exc.lane}: the upstream answer exceeds max_response_bytes ({limit} bytes); "
        "lower max_batch_items or raise max_response_bytes",
        limit=limit,
        lane=exc.lane,
        attempts=exc.attempts,
        elapsed=exc.elapsed,
        deadline=exc.deadline,
    )


def pin_dimensions(request: EmbedRequest, pinned: int | None) -> EmbedRequest:
    """The request with the lane's pinned dimensions filled in (a different one is refused)."""
    if pinned is None or request.dimensions == pinned:
        return request
    if request.dimensions is not None:
        raise RequestInvalid("dimensions", f"the lane is pinned to {pinned}")
    return dataclasses.replace(request, dimensions=pinned)


def check_vectors(result: EmbedResult, expected_count: int, pinned: int | None) -> None:
    """Refuse an answer whose vector count or lengths are wrong: it would corrupt a corpus."""
    if len(result.vectors) != expected_count:
        raise AttemptFailure(
            FailureKind.MALFORMED,
            f"sent {expected_count} inputs, got {len(result.vectors)} vectors",
        )
    if pinned is None:
        return
    for index, vector in enumerate(result.vectors):
        length = vector_length(vector)
        if length != pinned:
            raise AttemptFailure(
                FailureKind.DIMENSION,
                f"embedding {index} has length {length}, expected {pinned} (dimensions pin): "
                f"give the lane a model that answers {pinned}, or pin dimensions: {length}",
            )


def check_one_length(
    lane: Lane,
    vectors: Sequence[Vector],
    attempts: tuple[Attempt, ...],
    elapsed: float,
    deadline: Deadline,
) -> None:
    """Refuse an answer mixing vector lengths (batches from sources of different models)."""
    lengths = sorted({vector_length(vector) for vector in vectors})
    if len(lengths) > 1:
        raise DimensionMismatch(
            f"lane {lane.name}: vectors of one answer have different lengths {lengths}; "
            "pin the lane's dimensions or give it sources of one model",
            lane=lane.name,
            attempts=attempts,
            elapsed=elapsed,
            deadline=deadline.budget,
        )
