"""Streams relayed a network read at a time (issue 25): one send a read, parsed only where needed.

The upstream here is a transport whose stream hands over scripted network
reads, in virtual time, so what the gateway sends for each read is exact.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.clocks import VirtualClock
from laneway.config.models import LanewayConfig
from laneway.core.records import CallRecord
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream
from laneway.http.sse import lines_of
from laneway.server.asgi import Message
from tests.server.support import Records
from tests.virtual import VirtualSim, in_virtual_time

Read = bytes | float
"""A network read, or a pause of that many seconds before the next."""


def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "up-1", "object": "chat.completion.chunk", "model": "up-model"}
    return b"data: " + orjson.dumps({**body, "choices": [choice], **extra}) + b"\n\n"


def words(*texts: str) -> bytes:
    return b"".join(event({"content": text}) for text in texts)


OPENING = event({"role": "assistant", "content": "Once"})
FINAL = event({}, "stop") + (
    b'data: {"id":"up-1","object":"chat.completion.chunk","model":"up-model","choices":[],'
    b'"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}\n\n'
    b"data: [DONE]\n\n"
)


class _Reads:
    def __init__(self, clock: VirtualClock, reads: Sequence[Read]) -> None:
        self.status = 200
        self.headers: Mapping[str, str] = {"content-type": "text/event-stream"}
        self._clock, self._reads = clock, reads

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        for read in self._reads:
            if isinstance(read, float):
                await self._clock.sleep(read)
            else:
                yield read

    def lines(self) -> AsyncIterator[bytes]:
        return lines_of(self.blocks())

    async def read(self) -> bytes:
        return b"".join([block async for block in self.blocks()])


class ReadsTransport:
    """Streams each request's answer as the next script's reads; keeps the requests' bodies."""

    def __init__(self, clock: VirtualClock, *scripts: Sequence[Read]) -> None:
        self._clock, self._scripts = clock, list(scripts)
        self.bodies: list[dict[str, Any]] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        raise AssertionError("the relay tests stream")

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        self.bodies.append(orjson.loads(request.body))
        yield _Reads(self._clock, self._scripts.pop(0))

    async def aclose(self) -> None:
        return None


KEY = "sk-upstream-Secr3t-4242"


def settings(**lane: Any) -> LanewayConfig:
    sources = [
        {
            "name": "up",
            "provider": "openai",
            "base_url": "http://up/v1",
            "model": "m",
            "api_key": KEY,
        },
        {
            "name": "prefill",
            "provider": "openai",
            "base_url": "http://prefill/v1",
            "model": "m",
            "accepts_prefill": True,
            "priority": 1,
        },
    ]
    return LanewayConfig.model_validate({"lanes": {"chat": {"sources": sources, **lane}}})


async def relay(
    vsim: VirtualSim, transport: ReadsTransport, config: LanewayConfig, **asked: Any
) -> tuple[list[bytes], list[CallRecord]]:
    """The body messages the gateway sent for one streamed call, and the call's records."""
    records = Records()
    engine = build_engine(config, {}, transport=transport, clock=vsim.clock, observers=[records])
    gateway = gateway_over(config, engine, {})
    body = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    payload = orjson.dumps({**body, **asked})
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"content-length", str(len(payload)).encode()), (b"host", b"127.0.0.1")],
    }
    sent: list[bytes] = []
    given = False

    async def receive() -> Message:
        nonlocal given
        if given:
            await vsim.clock.sleep(3600)
            return {"type": "http.disconnect"}
        given = True
        return {"type": "http.request", "body": payload, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            sent.append(message["body"])

    await gateway(scope, receive, send)
    await engine.aclose()
    return sent, records.records


def text_of(sent: Sequence[bytes]) -> str:
    texts = []
    for line in b"".join(sent).split(b"\n"):
        if line.startswith(b"data: {"):
            data = orjson.loads(line[6:])
            texts += [c["delta"].get("content") or "" for c in data.get("choices") or []]
    return "".join(texts)


@in_virtual_time
async def test_a_read_of_plain_chunks_goes_on_in_one_send_as_it_came(vsim: VirtualSim) -> None:
    middle = words(" upon", " a", " time")
    transport = ReadsTransport(vsim.clock, [OPENING, middle, FINAL])
    sent, (record,) = await relay(vsim, transport, settings())
    assert sent[1] is middle
    assert len(sent) == 4 and sent[-1] == b"data: [DONE]\n\n"
    assert text_of(sent) == "Once upon a time"
    assert b'"usage"' not in b"".join(sent)  # the caller did not ask for the usage chunk
    assert record.usage.completion_tokens == 5 and record.usage.source == "provider"
    assert record.model == "up-model" and record.malformed_events == 0


@in_virtual_time
async def test_the_usage_chunk_is_sent_when_asked_for(vsim: VirtualSim) -> None:
    transport = ReadsTransport(vsim.clock, [OPENING, words(" upon"), FINAL])
    sent, _ = await relay(vsim, transport, settings(), stream_options={"include_usage": True})
    usage = [line for line in b"".join(sent).split(b"\n") if b'"usage"' in line]
    assert len(usage) == 1 and orjson.loads(usage[0][6:])["usage"]["total_tokens"] == 12


@in_virtual_time
async def test_a_read_holding_a_malformed_event_is_parsed_and_the_event_skipped(
    vsim: VirtualSim,
) -> None:
    broken = words(" upon") + b"data: {not json\n\n" + words(" a")
    transport = ReadsTransport(vsim.clock, [OPENING, broken, FINAL])
    sent, (record,) = await relay(vsim, transport, settings())
    assert b"not json" not in b"".join(sent)
    assert text_of(sent) == "Once upon a"
    assert record.malformed_events == 1


@in_virtual_time
async def test_a_cut_after_relayed_reads_is_interrupted_and_their_text_estimated(
    vsim: VirtualSim,
) -> None:
    transport = ReadsTransport(vsim.clock, [OPENING, words(" upon", " a", " time")])
    sent, (record,) = await relay(vsim, transport, settings())
    error = orjson.loads(sent[-1][6:])["error"]
    assert error["code"] == "stream_interrupted"
    assert text_of(sent) == "Once upon a time"
    assert record.usage.source == "estimated"
    assert record.usage.completion_tokens == 4  # "Once upon a time": 16 characters


@in_virtual_time
async def test_a_continuation_after_relayed_reads_prefills_their_text(vsim: VirtualSim) -> None:
    cut = [OPENING, words(" upon", " a")]
    rest = [event({"role": "assistant", "content": " time"}), FINAL]
    transport = ReadsTransport(vsim.clock, cut, rest)
    sent, _ = await relay(vsim, transport, settings(continue_on_cut=True))
    assert transport.bodies[1]["messages"][-1] == {"role": "assistant", "content": "Once upon a"}
    assert text_of(sent) == "Once upon a time"
    ids = {orjson.loads(line[6:])["id"] for line in b"".join(sent).split(b"\n") if b'"id"' in line}
    assert ids == {"up-1"}


@in_virtual_time
async def test_a_read_without_an_event_does_not_restart_the_idle_clock(vsim: VirtualSim) -> None:
    keep_alive = b": still here\n\n"
    reads: list[Read] = [OPENING, 0.6, keep_alive, 0.6, words(" upon"), FINAL]
    transport = ReadsTransport(vsim.clock, reads)
    sent, (record,) = await relay(vsim, transport, settings(idle_timeout="1s"))
    assert orjson.loads(sent[-1][6:])["error"]["code"] == "stream_interrupted"
    assert "idle_timeout" in record.attempts[0].message


@in_virtual_time
async def test_a_read_ending_the_answer_relays_its_plain_events_and_parses_the_rest(
    vsim: VirtualSim,
) -> None:
    plain = words(" upon", " a")
    transport = ReadsTransport(vsim.clock, [OPENING, plain + words(" time") + FINAL])
    sent, (record,) = await relay(vsim, transport, settings())
    assert sent[1].startswith(plain + words(" time"))
    assert text_of(sent) == "Once upon a time" and sent[-1] == b"data: [DONE]\n\n"
    assert record.usage.completion_tokens == 5


@in_virtual_time
async def test_a_relayed_read_that_quotes_the_key_goes_on_redacted(vsim: VirtualSim) -> None:
    quoting = words(" your key", f" is {KEY}")
    transport = ReadsTransport(vsim.clock, [OPENING, quoting, FINAL])
    sent, _ = await relay(vsim, transport, settings())
    assert KEY.encode() not in b"".join(sent)
    assert text_of(sent) == "Once your key is [redacted]"
