"""``AsgiTransport``: an in-process upstream acts, where the engine can tell, like a socket one."""

from __future__ import annotations

import pytest

from laneway.clocks import VirtualClock
from laneway.core.errors import AttemptFailure
from laneway.core.transport import HttpRequest
from laneway.http.asgi import AsgiTransport
from laneway.sim import create_app

CHAT = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
STREAM = b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'


def request(spec: str, body: bytes = CHAT, max_bytes: int | None = None) -> HttpRequest:
    url = f"http://sim.virtual/b/{spec}/v1/chat/completions"
    return HttpRequest("POST", url, {"Content-Type": "application/json"}, body, max_bytes)


def test_an_answer_takes_the_upstreams_time_in_virtual_time() -> None:
    clock = VirtualClock(start=0.0)
    transport = AsgiTransport(create_app(clock.now, clock.wall))
    response = clock.run(transport.send(request("sleep=5,status=429,retry_after=2")))
    assert (response.status, response.headers["retry-after"]) == (429, "2")
    assert clock.now() == 5.0
    assert len(transport.requests) == 1


def test_an_answer_past_max_bytes_is_too_large() -> None:
    clock = VirtualClock()
    transport = AsgiTransport(create_app(clock.now, clock.wall))
    with pytest.raises(AttemptFailure) as err:
        clock.run(transport.send(request("ok", max_bytes=10)))
    assert err.value.kind == "too_large"


def test_a_stream_the_upstream_breaks_off_is_cut() -> None:
    clock = VirtualClock()
    transport = AsgiTransport(create_app(clock.now, clock.wall))

    async def read_all() -> list[bytes]:
        async with transport.stream(request("cut_after=2", STREAM)) as answer:
            return [line async for line in answer.lines()]

    with pytest.raises(AttemptFailure) as err:
        clock.run(read_all())
    assert err.value.kind == "cut"


def test_a_caller_that_stops_waiting_hangs_up_and_the_upstream_ends() -> None:
    clock = VirtualClock(start=0.0)
    transport = AsgiTransport(create_app(clock.now, clock.wall))

    async def give_up_early() -> None:
        async with clock.deadline(1.0):
            await transport.send(request("no_headers"))

    with pytest.raises(TimeoutError):
        clock.run(give_up_early())
    assert clock.now() == 1.0
