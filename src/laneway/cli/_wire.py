"""What the probe shows of the wire: exchanges kept as sent, secrets and text hidden."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from laneway.core.records import CallRecord
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream, Transport
from laneway.core.types import Usage

KEPT_KEYS = frozenset({"model", "role", "type"})
"""Body keys whose strings are shown: they name things, they carry no caller text."""
KEPT_QUERY = frozenset({"alt"})
"""URL query parameters shown as they are; any other value could be a key."""


@dataclass(slots=True)
class RecordedExchange:
    """One request the engine sent, and the answer it got (``None`` if none came)."""

    request: HttpRequest
    response: HttpResponse | None = None


@dataclass(slots=True)
class RecordingTransport:
    """A ``Transport`` that keeps every exchange, so the probe can show the wire."""

    inner: Transport
    exchanges: list[RecordedExchange] = field(default_factory=list)

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send through ``inner`` and keep the request and its answer."""
        exchange = RecordedExchange(request)
        self.exchanges.append(exchange)
        exchange.response = await self.inner.send(request)
        return exchange.response

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        """Keep the request; streams are not read back (the probe does not stream)."""
        self.exchanges.append(RecordedExchange(request))
        async with self.inner.stream(request) as answer:
            yield answer

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()


@dataclass(slots=True)
class Records:
    """The ``CallRecord`` observer of the probe's engine."""

    records: list[CallRecord] = field(default_factory=list)

    def observe(self, record: CallRecord) -> None:
        """Keep the record."""
        self.records.append(record)


def describe_usage(usage: Usage) -> str:
    """One line: each figure, ``-`` where unknown, and where the figures came from."""
    if not usage.known:
        return "unknown (none reported, none estimated)"
    names = ("prompt", "completion", "total", "reasoning", "cached", "cache writes")
    values = (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.total_tokens,
        usage.reasoning_tokens,
        usage.cached_tokens,
        usage.cache_write_tokens,
    )
    figures = ", ".join(
        f"{n} {'-' if v is None else v}" for n, v in zip(names, values, strict=True)
    )
    return f"{figures} ({usage.source})"


def redact(value: Any, key: str | None = None) -> Any:
    """``value`` with every string but names (model, role, type) and every vector hidden."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return f"<{len(value)} numbers>"
        return [redact(v, key) for v in value]
    if isinstance(value, str) and key not in KEPT_KEYS:
        return f"<{len(value)} chars>"
    return value


def safe_url(url: str) -> str:
    """``url`` without credentials: user info dropped, query values other than ``alt`` hidden."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    query = [(k, v if k in KEPT_QUERY else "<hidden>") for k, v in parse_qsl(parts.query)]
    return urlunsplit((parts.scheme, host, parts.path, urlencode(query, safe="<>"), ""))


def body_json(body: bytes) -> Any:
    """The body's JSON, or a note saying it is not JSON (an answer may be anything)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return f"<{len(body)} bytes, not JSON>"
