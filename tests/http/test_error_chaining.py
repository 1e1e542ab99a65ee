"""The transport's errors keep what aiohttp said: ``__cause__`` is the original exception.

Raw loopback sockets play the upstream (refused, cut, not HTTP); the engine
test follows a refused connection from the socket to the caller's verdict.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest

from laneway import Laneway
from laneway.config import Secret
from laneway.config.models import LanewayConfig
from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.redact import Redactor
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream, Transport
from laneway.engine.redaction import RedactingTransport
from laneway.errors import StreamInterrupted, UpstreamFailed
from laneway.http import AiohttpTransport
from laneway.sim import RunningSim
from laneway.wire.decoding import load_json
from tests.engine.test_source_choice import closed_port
from tests.helpers import sim_url, unique_spec

CUT_BODY = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"
NOT_HTTP = b"garbage\r\n\r\n"


@asynccontextmanager
async def raw_upstream(answer: bytes) -> AsyncIterator[str]:
    """A loopback server that reads the request, writes ``answer`` and hangs up."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"


Via = Callable[[Transport, str], Awaitable[AttemptFailure]]


def get(url: str) -> HttpRequest:
    return HttpRequest("GET", url, {}, b"")


async def send_failure(transport: Transport, url: str) -> AttemptFailure:
    with pytest.raises(AttemptFailure) as caught:
        await transport.send(get(url))
    return caught.value


async def stream_failure(transport: Transport, url: str) -> AttemptFailure:
    with pytest.raises(AttemptFailure) as caught:
        async with transport.stream(get(url)) as http:
            async for _ in http.lines():
                pass
    return caught.value


@asynccontextmanager
async def refusing_upstream() -> AsyncIterator[str]:
    """A loopback port nothing listens on."""
    yield f"http://127.0.0.1:{closed_port()}/v1"


FAULTS = {
    "refused": (refusing_upstream, FailureKind.CONNECT, aiohttp.ClientConnectorError),
    "cut": (lambda: raw_upstream(CUT_BODY), FailureKind.CUT, aiohttp.ClientPayloadError),
    "not HTTP": (
        lambda: raw_upstream(NOT_HTTP),
        FailureKind.MALFORMED,
        aiohttp.ClientResponseError,
    ),
}
"""Each fault: the upstream that shows it, the attempt failure's kind, aiohttp's error class."""


@pytest.mark.parametrize("via", [send_failure, stream_failure], ids=["send", "stream"])
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_transport_failure_chains_aiohttps_error(via: Via, fault: str) -> None:
    upstream, kind, cause = FAULTS[fault]
    transport = AiohttpTransport()
    try:
        async with upstream() as url:
            failure = await via(transport, url)
    finally:
        await transport.aclose()
    assert failure.kind is kind
    assert isinstance(failure.__cause__, cause)


async def test_the_callers_verdict_leads_back_to_the_socket_error() -> None:
    """Verdict, then the last attempt's failure (``__context__``), then aiohttp's (``__cause__``).

    The lane has a key, so the engine's redacting transport is in the path too.
    """
    url = f"http://127.0.0.1:{closed_port()}/v1"
    source = {"base_url": url, "model": "m", "api_key": Secret(env="KEY")}
    config = LanewayConfig.model_validate({"lanes": {"lane": {"sources": [source]}}})
    async with Laneway.from_settings(config, environ={"KEY": "sk-chain-Secr3t-6666"}) as lw:
        assert isinstance(lw.engine.transport, RedactingTransport)
        with pytest.raises(UpstreamFailed) as caught:
            await lw.chat("lane", [{"role": "user", "content": "x"}])
    attempt_failure = caught.value.__context__
    assert isinstance(attempt_failure, AttemptFailure)
    assert attempt_failure.kind is FailureKind.CONNECT
    assert isinstance(attempt_failure.__cause__, aiohttp.ClientConnectorError)


class FailingTransport:
    """A transport whose every request fails with ``failure``, chained to an ``OSError``."""

    def __init__(self, failure: AttemptFailure) -> None:
        self.failure = failure

    async def send(self, request: HttpRequest) -> HttpResponse:
        raise self.failure from OSError("the socket's own words")

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        raise self.failure from OSError("the socket's own words")
        yield  # pragma: no cover (makes this a generator)

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("via", [send_failure, stream_failure], ids=["send", "stream"])
async def test_redaction_keeps_the_cause_unless_it_had_to_cut_a_secret(via: Via) -> None:
    redactor = Redactor(["sk-redact-Secr3t-7777"])
    plain = AttemptFailure(FailureKind.CONNECT, "cannot reach upstream: refused")
    kept = await via(RedactingTransport(FailingTransport(plain), redactor), "http://x/v1")
    assert kept is plain
    assert isinstance(kept.__cause__, OSError)
    quoting = AttemptFailure(FailureKind.CONNECT, "refused for key sk-redact-Secr3t-7777")
    cut = await via(RedactingTransport(FailingTransport(quoting), redactor), "http://x/v1")
    assert cut.message == "refused for key [redacted]"
    assert cut.__cause__ is None
    assert cut.__suppress_context__


def test_an_answer_that_is_not_json_chains_the_decoder_error() -> None:
    with pytest.raises(AttemptFailure) as caught:
        load_json(b"{not json", "chat answer")
    assert caught.value.kind is FailureKind.MALFORMED
    assert isinstance(caught.value.__cause__, orjson.JSONDecodeError)


def cut_streams(sim: RunningSim, fallback: bool) -> LanewayConfig:
    """Lane ``a`` cutting its stream after content; with ``fallback``, lane ``b`` behind it too."""
    names = ("a", "b") if fallback else ("a",)
    lanes: dict[str, Any] = {
        name: {"sources": [{"base_url": sim_url(sim, unique_spec("cut_after=2")), "model": "m"}]}
        for name in names
    }
    if fallback:
        lanes["a"]["fallback_lanes"] = ["b"]
    return LanewayConfig.model_validate({"lanes": lanes})


@pytest.mark.parametrize("fallback", [False, True], ids=["one lane", "fallback lanes"])
async def test_a_stream_cut_after_content_leads_back_to_the_socket_error(
    sim: RunningSim, fallback: bool
) -> None:
    """``StreamInterrupted``, then the attempt failure (``__cause__``), then aiohttp's."""
    async with Laneway.from_settings(cut_streams(sim, fallback), environ={}) as lw:
        stream = lw.chat_stream("a", [{"role": "user", "content": "x"}])
        with pytest.raises(StreamInterrupted) as caught:
            async for _ in stream:
                pass
    attempt_failure = caught.value.__cause__
    assert isinstance(attempt_failure, AttemptFailure)
    assert attempt_failure.kind is FailureKind.CUT
    assert isinstance(attempt_failure.__cause__, aiohttp.ClientPayloadError)
