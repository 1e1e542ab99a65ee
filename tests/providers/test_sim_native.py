"""The sim's Gemini and Anthropic routes speak their wire formats, faults included."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from laneway.sim import RunningSim
from tests.helpers import unique_spec

HI = [{"role": "user", "parts": [{"text": "hi"}]}]


async def post(sim: RunningSim, path: str, body: object) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.base_url}{path}", data=orjson.dumps(body)) as response,
    ):
        return response.status, await response.read()


def data_lines(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in body.split(b"\r\n\r\n") if line]


async def test_gemini_stream_is_crlf_framed_without_done(sim) -> None:
    path = f"/b/{unique_spec('chunks=2')}/v1beta/models/g:streamGenerateContent?alt=sse"
    status, body = await post(sim, path, {"contents": HI})
    assert status == 200 and b"[DONE]" not in body
    chunks = data_lines(body)
    final = chunks[-1]
    assert final["candidates"][0]["finishReason"] == "STOP"
    assert "finishReason" not in chunks[0]["candidates"][0]
    assert final["usageMetadata"] == {
        "promptTokenCount": 1,
        "candidatesTokenCount": 2,
        "totalTokenCount": 3,
    }


async def test_gemini_without_spec_and_unknown_methods(sim) -> None:
    status, body = await post(sim, "/v1beta/models/g:generateContent", {"contents": HI})
    assert status == 200 and orjson.loads(body)["modelVersion"] == "g"
    status, body = await post(sim, "/v1beta/models/g:countTokens", {"contents": HI})
    assert status == 404 and orjson.loads(body)["error"]["status"] == "NOT_FOUND"


async def test_gemini_embeddings_honour_output_dimensionality(sim) -> None:
    item = {"model": "models/e", "content": {"parts": [{"text": "a"}]}, "outputDimensionality": 5}
    status, body = await post(sim, "/v1beta/models/e:batchEmbedContents", {"requests": [item]})
    answer = orjson.loads(body)
    assert status == 200 and len(answer["embeddings"][0]["values"]) == 5
    assert answer["usageMetadata"]["promptTokenCount"] == 1


async def test_anthropic_stream_event_order(sim) -> None:
    body = {
        "model": "c",
        "max_tokens": 9,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    status, raw = await post(sim, f"/b/{unique_spec('reasoning,chunks=1')}/v1/messages", body)
    names = [line[7:].decode() for line in raw.split(b"\n") if line.startswith(b"event: ")]
    assert status == 200
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert names.count("content_block_start") == 2


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v1/messages", {"model": "c", "messages": []}, 400),
        ("/v1/messages/count_tokens", {"model": "c", "max_tokens": 1}, 404),
        ("/b/bogus/v1/messages", {"model": "c", "max_tokens": 1}, 400),
    ],
)
async def test_anthropic_refusals_are_anthropic_shaped(sim, path, body, status) -> None:
    got, raw = await post(sim, path, body)
    assert got == status
    assert orjson.loads(raw)["type"] == "error"
