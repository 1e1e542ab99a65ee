"""The state scripts' own Redis connection: in order, shared writes, and failures as redis-py's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from laneway.state.batching import ScriptBatch
from laneway.state.redis_client import fast_failing_client
from laneway.state.resp import RespPipe, pack, script_runner
from tests.proxy import TcpProxy
from tests.state.conftest import REDIS_URL

ECHO = "return {ARGV[1], redis.call('INCR', KEYS[1])}"


def script(text: str) -> AsyncScript:
    """A script registered nowhere yet: its first ``EVALSHA`` meets ``NOSCRIPT``."""
    return AsyncScript(Redis(), f"{text} -- {uuid.uuid4().hex}")


@pytest.fixture
async def pipe(redis_client: Redis) -> AsyncIterator[RespPipe]:
    client = fast_failing_client(REDIS_URL, 2.0)
    runner = script_runner(client, 2.0)
    assert isinstance(runner, RespPipe)
    yield runner
    await runner.aclose()
    await client.aclose()


async def test_concurrent_calls_get_their_own_answers_in_the_order_they_ran(
    pipe: RespPipe, redis_client: Redis, redis_prefix: str
) -> None:
    echo = script(ECHO)
    counter = f"{redis_prefix}:n"
    answers = await asyncio.gather(*(pipe.run(echo, [counter], [f"call {n}"]) for n in range(50)))
    assert answers == [[f"call {n}", n + 1] for n in range(50)]
    assert await pipe.run(echo, [counter], ["again"]) == ["again", 51]
    assert await redis_client.get(counter) == "51"


async def test_a_call_cancelled_before_its_write_leaves_is_not_sent(
    pipe: RespPipe, redis_prefix: str
) -> None:
    count = script("return redis.call('INCR', KEYS[1])")
    counter = f"{redis_prefix}:n"
    assert await pipe.run(count, [counter], []) == 1  # connected
    given_up = asyncio.create_task(pipe.run(count, [counter], []))
    await asyncio.sleep(0)  # the call is queued for this turn's write
    given_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await given_up
    assert await pipe.run(count, [counter], []) == 2, "the cancelled call never ran"


async def test_an_error_a_script_raises_is_redis_pys_response_error(pipe: RespPipe) -> None:
    with pytest.raises(ResponseError, match="boom"):
        await pipe.run(script("return redis.error_reply('boom')"), [], [])
    assert await pipe.run(script("return 7"), [], []) == 7, "the connection goes on"


async def test_a_cut_connection_fails_the_calls_waiting_and_the_next_call_reconnects(
    redis_prefix: str,
) -> None:
    target = urlsplit(REDIS_URL)
    proxy = TcpProxy((target.hostname or "127.0.0.1", target.port or 6379))
    await proxy.start()
    client = fast_failing_client(f"redis://127.0.0.1:{proxy.port}/0", 2.0)
    pipe = script_runner(client, 2.0)
    slow = script("redis.call('INCR', KEYS[1]); return 1")
    assert await pipe.run(slow, [f"{redis_prefix}:n"], []) == 1
    await proxy.stop()
    with pytest.raises(OSError):
        await pipe.run(slow, [f"{redis_prefix}:n"], [])
    await proxy.start()
    assert await pipe.run(slow, [f"{redis_prefix}:n"], []) == 1
    await pipe.aclose()
    await client.aclose()
    await proxy.stop()


async def test_a_server_that_never_answers_fails_the_call_after_the_timeout() -> None:
    held: list[asyncio.StreamWriter] = []

    async def accept_and_say_nothing(_: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        held.append(w)

    server = await asyncio.start_server(accept_and_say_nothing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = fast_failing_client(f"redis://127.0.0.1:{port}/0", 0.2)
    pipe = script_runner(client, 0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TimeoutError):
        await pipe.run(script("return 1"), [], [])
    assert loop.time() - started < 5.0, "bounded by the timeout, with a busy host's slack"
    await pipe.aclose()
    await client.aclose()
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_a_database_other_than_0_is_selected_first(
    redis_client: Redis, redis_prefix: str
) -> None:
    client = fast_failing_client(REDIS_URL.rsplit("/", 1)[0] + "/1", 2.0)
    pipe = script_runner(client, 2.0)
    key = f"{redis_prefix}:in-db-1"
    await pipe.run(script("return redis.call('SET', KEYS[1], 'here')"), [key], [])
    assert await redis_client.get(key) is None, "not written to database 0"
    assert await client.get(key) == "here"
    await client.delete(key)
    await pipe.aclose()
    await client.aclose()


async def test_a_tls_client_keeps_redis_py() -> None:
    client = fast_failing_client("rediss://127.0.0.1:6380/0", 0.2)
    assert isinstance(script_runner(client, 0.2), ScriptBatch)
    await client.aclose()


def test_a_command_is_packed_in_resp_with_numbers_written_as_str_writes_them() -> None:
    packed = pack("EVALSHA", "ab", 2, 0.1, b"\x00")
    assert packed == b"*5\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n2\r\n$3\r\n0.1\r\n$1\r\n\x00\r\n"


def test_a_part_redis_cannot_take_is_refused_not_sent_as_its_name() -> None:
    with pytest.raises(TypeError):
        pack("EVALSHA", None)
