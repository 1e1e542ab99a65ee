"""The official OpenAI Python SDK's default retries, around one gateway request.

A client made with the SDK's defaults (``max_retries=2``, a 600 s read
timeout) sends ``x-stainless-retry-count`` and ``x-stainless-read-timeout``
and, after an error answer, retries as ``openai._base_client``'s
``_retry_request`` does: while retries remain and ``_should_retry`` says so
(``x-should-retry`` first, then 408, 409, 429 and 5xx, never past a
``Retry-After`` of more than two minutes), after ``_calculate_retry_timeout``:
the ``Retry-After`` (or ``retry-after-ms``) when it is in (0, 120] s,
otherwise ``0.5 * 2**n`` capped at 8 s less up to 25 % of jitter. The
decisions are the installed SDK's own methods; only the jitter is drawn from
the case's seeded generator instead of the process's, so a run replays.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Mapping

import httpx2
import openai
from openai._constants import INITIAL_RETRY_DELAY, MAX_RETRY_AFTER_DELAY, MAX_RETRY_DELAY

from laneway.core.clock import Clock

CLIENT = openai.AsyncOpenAI(api_key="oracle", base_url="http://127.0.0.1/v1")
"""An SDK client with every default: whose retry rules are emulated (it sends nothing)."""
MAX_RETRIES = CLIENT.max_retries
READ_TIMEOUT = CLIENT.timeout.read if isinstance(CLIENT.timeout, httpx2.Timeout) else None

Send = Callable[[dict[str, str]], Awaitable[tuple[int, Mapping[str, str]]]]
"""Sends one try with the SDK's headers; returns the answer's status and headers."""


def sdk_headers(retries_taken: int) -> dict[str, str]:
    """The retry headers the SDK adds to a try."""
    return {
        "x-stainless-retry-count": str(retries_taken),
        "x-stainless-read-timeout": str(READ_TIMEOUT),
    }


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """The SDK's ``_should_retry`` on an answer of ``status`` and ``headers``."""
    return CLIENT._should_retry(httpx2.Response(status, headers=dict(headers)))


def retry_wait(retries_taken: int, headers: Mapping[str, str], rng: random.Random) -> float:
    """The SDK's ``_calculate_retry_timeout`` before retry ``retries_taken + 1``."""
    retry_after = CLIENT._parse_retry_after_header(httpx2.Headers(dict(headers)))
    finite = retry_after is not None and math.isfinite(retry_after)
    if finite and retry_after is not None and 0 < retry_after <= MAX_RETRY_AFTER_DELAY:
        return retry_after
    sleep = min(INITIAL_RETRY_DELAY * 2.0**retries_taken, MAX_RETRY_DELAY)
    return max(sleep * (1 - 0.25 * rng.random()), 0.0)


async def with_retries(send: Send, clock: Clock, rng: random.Random) -> int:
    """Make the tries a default SDK client makes; returns how many it made."""
    for retries_taken in range(MAX_RETRIES + 1):
        status, headers = await send(sdk_headers(retries_taken))
        if status < 400 or retries_taken == MAX_RETRIES or not should_retry(status, headers):
            return retries_taken + 1
        await clock.sleep(retry_wait(retries_taken, headers, rng))
    return MAX_RETRIES + 1
