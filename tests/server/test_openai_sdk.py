"""The official OpenAI SDK, sync and async, against the gateway.

``max_retries=0`` everywhere: the SDK's own retries would hide the gateway's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import RunningGateway, config, serve_gateway, source

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes: dict[str, dict[str, Any]] = {
        "chat": {"sources": [source(sim, unique_spec("model=answering-model"))]},
        "embed": {"kind": "embed", "dimensions": 16, "sources": [source(sim, unique_spec(""))]},
        "slow": {"sources": [source(sim, unique_spec("sleep=5"))]},
        "cut": {"sources": [source(sim, unique_spec("cut_after=2"))]},
    }
    with serve_gateway(config(lanes, deadline_margin="400ms")) as running:
        yield running


def client(gw: RunningGateway, timeout: float = 10.0) -> OpenAI:
    return OpenAI(base_url=gw.v1, api_key="unused", max_retries=0, timeout=timeout)


def test_chat_names_the_answering_model_and_carries_laneway_headers(gw) -> None:
    with client(gw) as sdk:
        raw = sdk.chat.completions.with_raw_response.create(model="chat", messages=HELLO)
    answer = raw.parse()
    assert answer.choices[0].message.content == "sim answer w2 w3 w4"
    assert answer.model == "answering-model"
    assert raw.headers["x-laneway-lane"] == "chat"
    assert raw.headers["x-laneway-source"] == "openai:sim-model"
    assert raw.headers["x-laneway-attempts"] == "1"


def test_stream_without_include_usage_has_no_usage_chunk(gw) -> None:
    with client(gw) as sdk:
        chunks = list(sdk.chat.completions.create(model="chat", messages=HELLO, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "sim answer w2 w3 w4"
    assert all(c.choices and c.usage is None for c in chunks)
    assert chunks[-1].model == "answering-model"


async def test_async_chat_and_stream_with_usage(gw) -> None:
    async with AsyncOpenAI(base_url=gw.v1, api_key="unused", max_retries=0) as sdk:
        answer = await sdk.chat.completions.create(model="chat", messages=HELLO)
        stream = await sdk.chat.completions.create(
            model="chat", messages=HELLO, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    assert answer.usage is not None and answer.usage.completion_tokens == 5
    last = chunks[-1]
    assert not last.choices and last.usage is not None and last.usage.completion_tokens == 5


def test_stream_cut_after_content_raises_in_the_sdk(gw) -> None:
    """The in-band error event reaches SDK users as an exception, not as a short answer."""
    received: list[str] = []
    with client(gw) as sdk, pytest.raises(openai.APIError, match="stream interrupted"):
        stream = sdk.chat.completions.create(model="cut", messages=HELLO, stream=True)
        received.extend(chunk.choices[0].delta.content or "" for chunk in stream)
    assert "".join(received) == "sim answer"


def test_embeddings_packed_by_default_and_as_floats(gw) -> None:
    with client(gw) as sdk:
        packed = sdk.embeddings.create(model="embed", input=["one", "two"])
        floats = sdk.embeddings.create(model="embed", input="one", encoding_format="float")
    assert [len(item.embedding) for item in packed.data] == [16, 16]
    assert packed.data[0].embedding == pytest.approx(floats.data[0].embedding, rel=1e-6)
    assert packed.usage.prompt_tokens is not None


def test_models_lists_the_lanes(gw) -> None:
    with client(gw) as sdk:
        assert [model.id for model in sdk.models.list()] == ["chat", "embed", "slow", "cut"]


def test_sdk_errors_are_typed(gw) -> None:
    with client(gw) as sdk:
        with pytest.raises(openai.NotFoundError, match="lanes: chat, embed, slow, cut"):
            sdk.chat.completions.create(model="nope", messages=HELLO)
        with pytest.raises(openai.BadRequestError, match="messages"):
            sdk.chat.completions.create(model="chat", messages=[])


def test_sdk_timeout_becomes_the_call_deadline(gw) -> None:
    """The SDK's read timeout (0.8 s) less the margin (0.4 s) bounds the call: a 504 first."""
    started = time.perf_counter()
    with client(gw, timeout=0.8) as sdk, pytest.raises(openai.InternalServerError) as caught:
        sdk.chat.completions.create(model="slow", messages=HELLO)
    elapsed = time.perf_counter() - started
    assert caught.value.status_code == 504  # the gateway answered before the SDK timed out
    assert 0.39 <= elapsed < 0.8 + 1.0  # slack: the SDK's first call imports for ~0.4 s
