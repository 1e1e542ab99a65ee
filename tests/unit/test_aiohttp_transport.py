"""``AiohttpTransport.send`` against a real local server: bodies read whole, bounded by size."""

from __future__ import annotations

import gzip

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from laneway.core.errors import AttemptFailure
from laneway.core.transport import HttpRequest
from laneway.http.aiohttp import AiohttpTransport

PLAIN = b'{"ok": true}' * 100


async def plain(_: web.Request) -> web.Response:
    return web.Response(body=PLAIN, content_type="application/json")


async def inflating(_: web.Request) -> web.Response:
    """A small gzip body that inflates far past the limit (a sized read must not trust it)."""
    packed = gzip.compress(b"0" * 100_000)
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    return web.Response(body=packed, headers=headers)


@pytest.fixture
async def base_url():
    app = web.Application()
    app.router.add_post("/plain", plain)
    app.router.add_post("/inflating", inflating)
    async with TestServer(app) as server:
        yield str(server.make_url("/"))


async def test_a_sized_body_under_the_limit_is_read_whole(base_url: str) -> None:
    transport = AiohttpTransport()
    try:
        answer = await transport.send(HttpRequest("POST", f"{base_url}plain", max_bytes=10_000))
    finally:
        await transport.aclose()
    assert answer.status == 200 and answer.body == PLAIN


async def test_a_sized_body_over_the_limit_fails_before_reading(base_url: str) -> None:
    transport = AiohttpTransport()
    try:
        with pytest.raises(AttemptFailure, match="max_response_bytes") as failure:
            await transport.send(HttpRequest("POST", f"{base_url}plain", max_bytes=100))
    finally:
        await transport.aclose()
    assert failure.value.label == "too_large"


async def test_a_compressed_body_is_bounded_by_its_inflated_size(base_url: str) -> None:
    transport = AiohttpTransport()
    try:
        with pytest.raises(AttemptFailure, match="max_response_bytes"):
            await transport.send(HttpRequest("POST", f"{base_url}inflating", max_bytes=10_000))
    finally:
        await transport.aclose()
