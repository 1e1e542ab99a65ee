"""A streamed chat call as a caller sees it, against any OpenAI-compatible gateway.

``ask`` sends one ``stream: true`` request with ``stream_options.include_usage``
and records what came back: status, the text, whose words they were (each
chunk's ``model``; the fault scenarios' upstreams name themselves), the usage
chunk, whether ``[DONE]`` closed it, an error (HTTP body or in-band event),
and the time to the end of the answer. Laneway's gateway and LiteLLM's proxy
are measured by this same code; a client of another kind (the tests' in-process
one, on virtual time) feeds what it reads to a ``StreamReading`` and gets the
same ``StreamedAnswer``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

MESSAGES = [{"role": "user", "content": "fault scenario: say hello"}]
DONE = b"[DONE]"


@dataclass(frozen=True, slots=True)
class StreamedAnswer:
    """One streamed call: ``start`` is seconds from the series' start, ``elapsed`` its length."""

    start: float
    elapsed: float
    status: int
    text: str = ""
    models: tuple[str, ...] = ()
    """The chunks' ``model`` values, in order of first appearance, over content chunks."""
    usage: dict[str, Any] | None = None
    done: bool = False
    error: str | None = None
    """Error code of an HTTP error body or an in-band error event, or the transport error."""


@dataclass(slots=True)
class StreamReading:
    """What a caller has read of one answer so far, whatever client read it."""

    text: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    done: bool = False
    error: str | None = None

    def take(self, data: bytes) -> None:
        """Take one SSE event's ``data`` payload: a chunk, an error event or ``[DONE]``."""
        if data == DONE:
            self.done = True
            return
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if not isinstance(event, dict):
            return
        if "error" in event:
            self.error = _error_code(event)
            return
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        for choice in event.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if content:
                self.text.append(content)
                model = event.get("model")
                if isinstance(model, str) and model not in self.models:
                    self.models.append(model)

    def take_body(self, status: int, raw: bytes) -> None:
        """Take a whole answer that was not a stream: an error's code, unless it is a 200."""
        try:
            self.error = _error_code(orjson.loads(raw)) if status != 200 else None
        except orjson.JSONDecodeError:
            self.error = "unreadable body"

    def answer(self, start: float, elapsed: float, status: int) -> StreamedAnswer:
        """The call as read: it started ``start`` s into its series and lasted ``elapsed`` s."""
        return StreamedAnswer(
            start=start,
            elapsed=elapsed,
            status=status,
            text="".join(self.text),
            models=tuple(self.models),
            usage=self.usage,
            done=self.done,
            error=self.error,
        )


def _error_code(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or error.get("type") or "error")
    return "error"


def request_body(model: str) -> dict[str, Any]:
    """The streamed request every scenario sends."""
    return {
        "model": model,
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def ask(
    session: aiohttp.ClientSession, url: str, model: str, timeout: float, origin: float
) -> StreamedAnswer:
    """POST one streamed call to ``url``; ``origin`` is the series' start (monotonic).

    The caller gives up after ``timeout`` seconds (error ``client_timeout``).
    """
    started = time.monotonic()
    reading = StreamReading()
    status = 0
    try:
        async with asyncio.timeout(timeout):
            status = await _read(session, url, model, reading)
    except TimeoutError:
        reading.error = "client_timeout"
    except aiohttp.ClientError as exc:
        reading.error = type(exc).__name__
    return reading.answer(started - origin, time.monotonic() - started, status)


async def _read(
    session: aiohttp.ClientSession, url: str, model: str, reading: StreamReading
) -> int:
    async with session.post(url, data=orjson.dumps(request_body(model))) as response:
        if response.content_type != "text/event-stream":
            reading.take_body(response.status, await response.read())
            return response.status
        async for line in response.content:
            if line.startswith(b"data:"):
                reading.take(line[5:].strip())
        return response.status


async def ask_series(
    session: aiohttp.ClientSession,
    url: str,
    model: str,
    starts: Sequence[float],
    timeout: float,
) -> list[StreamedAnswer]:
    """Start a call at each of ``starts`` (seconds from now) whatever earlier calls do."""
    origin = time.monotonic()

    async def one(at: float) -> StreamedAnswer:
        await asyncio.sleep(max(0.0, origin + at - time.monotonic()))
        return await ask(session, url, model, timeout, origin)

    return list(await asyncio.gather(*(one(at) for at in starts)))
