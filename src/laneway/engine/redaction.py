"""``RedactingTransport``: the transport port with every secret cut out of what upstreams say.

Upstream text enters laneway here and nowhere else: error answers (whose
body may be passed through to the caller and whose message ends up in
attempts, logs and telemetry), stream lines (an error event can quote the
key), and the transport's own failure messages. Redacting at this one door
keeps everything downstream clean without a check at each exit. Successful
non-streamed answers are not scanned (their bodies go to the caller as the
upstream wrote them, and scanning would cost every call); streams are, one
precompiled ``search`` per block of whole lines (one network read). The
engine wraps its transport only when the configuration holds secrets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager

from laneway.core.errors import AttemptFailure
from laneway.core.redact import Redactor
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream, Transport


class RedactingTransport:
    """``inner`` with ``redactor`` applied to error answers, stream lines and failures."""

    def __init__(self, inner: Transport, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send through ``inner``; an error answer's body comes back redacted."""
        try:
            response = await self.inner.send(request)
        except AttemptFailure as failure:
            clean = self._redacted(failure)
            if clean is failure:
                raise
            raise clean from None
        if response.status < 400:
            return response
        return HttpResponse(response.status, response.headers, self.redactor.bytes(response.body))

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        """Open through ``inner``; lines and error bodies come back redacted."""
        try:
            async with self.inner.stream(request) as http:
                yield _RedactedStream(http, self.redactor)
        except AttemptFailure as failure:
            clean = self._redacted(failure)
            if clean is failure:
                raise
            raise clean from None

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()

    def _redacted(self, failure: AttemptFailure) -> AttemptFailure:
        """``failure`` itself when it quotes no secret, else a copy without them.

        The first is re-raised as it is, its ``__cause__`` (the transport's
        own error) kept; the copy is raised ``from None``, since the original
        and its cause are what quoted the secret.
        """
        message = self.redactor.text(failure.message)
        if message is failure.message:
            return failure
        return dataclasses.replace(failure, message=message)


class _RedactedStream:
    """An ``HttpStream`` whose lines and remaining body are redacted as they are read."""

    def __init__(self, inner: HttpStream, redactor: Redactor) -> None:
        self.status = inner.status
        self.headers: Mapping[str, str] = inner.headers
        self._inner = inner
        self._redact = redactor.bytes

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        """The inner blocks, each redacted: whole lines, so no secret straddles two."""
        redact = self._redact
        async for block in self._inner.blocks():
            yield redact(block)

    async def lines(self) -> AsyncIterator[bytes]:
        """The inner lines, each redacted."""
        redact = self._redact
        async for line in self._inner.lines():
            yield redact(line)

    async def read(self) -> bytes:
        """The rest of the body, redacted."""
        return self._redact(await self._inner.read())
