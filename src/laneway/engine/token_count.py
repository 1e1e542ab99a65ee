"""``/v1/messages/count_tokens``: the count from an Anthropic source that answers it.

A lane's runnable sources are asked in order; only an adapter that has a
count endpoint (``count_tokens_request``: Anthropic's) is asked, each within
``COUNT_TIMEOUT``. A source that fails or answers anything but a count is
passed over; with no count from any, the caller gets laneway's own estimate
(``laneway.server.count_tokens`` marks it as one). A count is a free call
that bills nothing, so it takes no quota, breaker or health slot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from laneway.core.clock import Clock
from laneway.core.errors import AttemptFailure
from laneway.core.transport import Transport
from laneway.engine.lane import Lane

COUNT_TIMEOUT = 10.0
"""Seconds one source has to answer a count before the next (or the estimate) is used."""


async def upstream_count(
    lane: Lane, transport: Transport, clock: Clock, body: Mapping[str, Any]
) -> tuple[int, str] | None:
    """``(input_tokens, source name)`` from the first source that counts ``body``, or ``None``."""
    for source in lane.runnable:
        build = getattr(source.provider, "count_tokens_request", None)
        if build is None:
            continue
        try:
            async with clock.deadline(clock.now() + COUNT_TIMEOUT):
                answer = await transport.send(build(body))
        except (AttemptFailure, TimeoutError):
            continue
        count = _count(answer.status, answer.body)
        if count is not None:
            return count, source.name
    return None


def _count(status: int, body: bytes) -> int | None:
    if status != 200:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    tokens = data.get("input_tokens") if isinstance(data, dict) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
