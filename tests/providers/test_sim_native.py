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
        ("/v1/messages/batches", {"model": "c", "max_tokens": 1}, 404),
        ("/v1/messages/count_tokens", {"model": "c"}, 400),
        ("/b/bogus/v1/messages", {"model": "c", "max_tokens": 1}, 400),
    ],
)
async def test_anthropic_refusals_are_anthropic_shaped(sim, path, body, status) -> None:
    got, raw = await post(sim, path, body)
    assert got == status
    assert orjson.loads(raw)["type"] == "error"


def anthropic(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "c",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": "hi"}],
    }
    body.update(fields)
    return body


TOOL = {"name": "f", "input_schema": {"type": "object"}}
USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (anthropic(n=2), "n: Extra inputs"),
        (anthropic(temperature=1.5), "temperature"),
        (anthropic(tool_choice={"type": "any"}), "tool_choice may only be specified"),
        (anthropic(tools=[{"name": "f", "input_schema": {"type": "array"}}]), "input_schema.type"),
        (
            anthropic(
                tools=[TOOL],
                tool_choice={"type": "any"},
                thinking={"type": "enabled", "budget_tokens": 1024},
                max_tokens=2000,
            ),
            "Thinking may not be enabled",
        ),
        (anthropic(thinking={"type": "enabled", "budget_tokens": 1024}), "greater than thinking"),
        (anthropic(messages=[{"role": "system", "content": "x"}]), "role"),
        (anthropic(messages=[{"role": "user", "content": ""}]), "non-empty"),
        (anthropic(messages=[{"role": "user", "content": "a"}, USE]), "tool_use blocks have no"),
        (
            anthropic(
                messages=[
                    {"role": "user", "content": "a"},
                    USE,
                    {"role": "user", "content": [{"type": "text", "text": "no result"}]},
                ]
            ),
            "without tool_result",
        ),
        (
            anthropic(
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/bmp",
                                    "data": "AA",
                                },
                            }
                        ],
                    }
                ]
            ),
            "media_type",
        ),
    ],
)
async def test_anthropic_checks_every_field(sim, body, words) -> None:
    status, raw = await post(sim, "/v1/messages", body)
    error = orjson.loads(raw)
    assert status == 400 and error["type"] == "error"
    assert words in error["error"]["message"]


def gemini(**fields: Any) -> dict[str, Any]:
    return {"contents": HI, **fields}


CALL = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (gemini(generation_config={}), 'Unknown name "generation_config"'),
        (gemini(generationConfig={"n": 2}), 'Unknown name "n"'),
        (gemini(generationConfig={"responseSchema": {"type": "OBJECT"}}), "responseMimeType"),
        (
            gemini(
                generationConfig={
                    "responseMimeType": "application/json",
                    "responseSchema": {"type": "OBJECT", "properties": {}},
                }
            ),
            "non-empty for OBJECT",
        ),
        (
            gemini(
                generationConfig={
                    "responseMimeType": "application/json",
                    "responseSchema": {"type": "OBJECT", "additionalProperties": False},
                }
            ),
            'Unknown name "additionalProperties"',
        ),
        (gemini(contents=[{"role": "assistant", "parts": [{"text": "x"}]}]), "valid role"),
        (
            gemini(contents=[{"role": "user", "parts": [{"text": "x", "inlineData": {}}]}]),
            "exactly one",
        ),
        (
            gemini(
                contents=[
                    *HI,
                    CALL,
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": {}}}] * 2,
                    },
                ]
            ),
            "number of function response parts",
        ),
        (gemini(tools=[{"functionDeclarations": [{"name": "1f"}]}]), "Invalid function name"),
        (
            gemini(
                toolConfig={
                    "functionCallingConfig": {"mode": "AUTO", "allowedFunctionNames": ["f"]}
                }
            ),
            "allowed_function_names",
        ),
    ],
)
async def test_gemini_checks_every_field(sim, body, words) -> None:
    status, raw = await post(sim, "/v1beta/models/g:generateContent", body)
    assert status == 400
    assert words in orjson.loads(raw)["error"]["message"]


async def test_azure_wants_an_api_version_and_a_key(sim) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    path = "/openai/deployments/d/chat/completions"
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{sim.base_url}{path}", json=chat, headers={"api-key": "k"}) as r:
            assert r.status == 404
        async with session.post(f"{sim.base_url}{path}?api-version=2024-10-21", json=chat) as r:
            assert r.status == 401
        url = f"{sim.base_url}{path}?api-version=2024-10-21"
        async with session.post(url, json=chat, headers={"api-key": "k"}) as r:
            answer = await r.json()
    assert answer["model"] == "d" and answer["choices"][0]["content_filter_results"]


@pytest.mark.parametrize("count", [9223372036854775808, 9])
async def test_gemini_candidate_count_over_eight_is_a_400(sim, count) -> None:
    body = {"contents": HI, "generationConfig": {"candidateCount": count}}
    status, answer = await post(sim, "/v1beta/models/g:generateContent", body)
    assert status == 400 and b"candidate_count" in answer
