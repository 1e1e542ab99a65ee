"""A ``CallRecord`` and its cost as one row of ``schema.COLUMNS``."""

from __future__ import annotations

import functools
import hashlib

import orjson

from laneway.core.records import CallRecord
from laneway.telemetry.port import Row


@functools.lru_cache(maxsize=4096)
def caller_hash(caller: str) -> str:
    """The stored form of a caller: a short SHA-256, so no key or name is kept in clear.

    ``laneway spend --by key`` hashes the configured key names the same way to
    show names again. Kept for the last 4,096 callers: every row of a key would
    hash the same name again (a fifth of building a row).
    """
    return hashlib.sha256(caller.encode()).hexdigest()[:16]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def to_row(record: CallRecord, cost_usd: float | None, cost_status: str) -> Row:
    """The row for ``record``, in column order; unknown figures stay ``None``."""
    usage = record.usage
    caller = record.meta.caller
    return (
        record.time,
        record.meta.request_id,
        record.lane,
        record.kind,
        record.source,
        record.provider,
        record.model,
        record.outcome,
        record.error,
        record.status,
        len(record.attempts),
        orjson.dumps([a.as_dict() for a in record.attempts]).decode(),
        record.pushbacks,
        record.cache,
        _ms(record.latency),
        _ms(record.ttfb),
        _ms(record.queue_wait),
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.total_tokens,
        usage.reasoning_tokens,
        usage.cached_tokens,
        usage.source,
        cost_usd,
        cost_status,
        record.embedding_dim,
        None if caller is None else caller_hash(caller),
        record.stream,
        record.malformed_events,
        usage.cache_write_tokens,
    )
