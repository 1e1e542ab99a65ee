"""The wider OpenAI surface: one model, routes without ``/v1``, request ids, account headers,
token-array embeddings and the default body limit."""

from __future__ import annotations

from typing import Any

import aiohttp
import openai
import pytest
from openai import OpenAI

from laneway.config.models import ServerConfig
from tests.server.scripted import LANES, TEXT, Scripted, ScriptedUpstream
from tests.server.support import HELLO, RunningGateway, post

MiB = 1024 * 1024


@pytest.fixture
def gw(scripted: Scripted) -> RunningGateway:
    return scripted.gw


@pytest.fixture
def upstream(scripted: Scripted) -> ScriptedUpstream:
    return scripted.upstream


def sdk(base_url: str, **options: Any) -> OpenAI:
    return OpenAI(base_url=base_url, api_key="unused", max_retries=0, **options)


def test_one_model_by_id(gw: RunningGateway) -> None:
    with sdk(gw.v1) as client:
        model = client.models.retrieve("chat")
        assert (model.id, model.object, model.owned_by) == ("chat", "model", "laneway")
        with pytest.raises(openai.NotFoundError, match="nope"):
            client.models.retrieve("nope")


def test_routes_without_the_v1_prefix(gw: RunningGateway) -> None:
    with sdk(gw.url) as client:
        answer = client.chat.completions.create(model="chat", messages=HELLO)  # type: ignore[arg-type]
        assert answer.choices[0].message.content == TEXT
        assert [model.id for model in client.models.list()] == list(LANES)
        assert client.models.retrieve("embed").id == "embed"


def test_request_id_is_echoed_forwarded_and_recorded(
    scripted: Scripted,
) -> None:
    gw, upstream, records = scripted.gw, scripted.upstream, scripted.records
    with sdk(gw.v1, default_headers={"X-Request-Id": "trace-7"}) as client:
        raw = client.chat.completions.with_raw_response.create(model="chat", messages=HELLO)  # type: ignore[arg-type]
    assert raw.headers["x-request-id"] == "trace-7"
    assert upstream.headers[-1]["x-request-id"] == "trace-7"
    assert any(record.meta.request_id == "trace-7" for record in records.records)


def test_a_request_id_is_made_when_none_is_sent(
    scripted: Scripted,
) -> None:
    gw, upstream, records = scripted.gw, scripted.upstream, scripted.records
    with sdk(gw.v1) as client:
        raw = client.embeddings.with_raw_response.create(model="embed", input="hi")
    made = raw.headers["x-request-id"]
    assert len(made) == 32
    assert upstream.headers[-1]["x-request-id"] == made
    assert any(record.meta.request_id == made for record in records.records)


async def test_an_unusable_request_id_is_refused(gw: RunningGateway) -> None:
    async with aiohttp.ClientSession() as http:
        status, headers, body = await post(
            http,
            f"{gw.v1}/chat/completions",
            {"model": "chat", "messages": HELLO},
            **{"X-Request-Id": "x" * 201},
        )
    assert status == 400
    assert body["error"]["param"] == "X-Request-Id"
    assert headers["x-request-id"] != "x" * 201


def test_openai_account_headers_are_forwarded(
    gw: RunningGateway, upstream: ScriptedUpstream
) -> None:
    with sdk(gw.v1, organization="org-1", project="proj-1") as client:
        client.chat.completions.create(model="chat", messages=HELLO)  # type: ignore[arg-type]
    sent = upstream.headers[-1]
    assert (sent["openai-organization"], sent["openai-project"]) == ("org-1", "proj-1")
    assert "authorization" not in sent


def test_token_arrays_pass_through_to_openai_sources(
    gw: RunningGateway, upstream: ScriptedUpstream
) -> None:
    with sdk(gw.v1) as client:
        many = client.embeddings.create(
            model="embed", input=[[1, 2, 3], [4, 5]], encoding_format="float"
        )
        assert upstream.last["input"] == [[1, 2, 3], [4, 5]]
        one = client.embeddings.create(model="embed", input=[7, 8, 9], encoding_format="float")
        assert upstream.last["input"] == [[7, 8, 9]]
    assert len(many.data) == 2 and len(one.data) == 1


def test_token_arrays_are_refused_where_the_wire_takes_text(gw: RunningGateway) -> None:
    with sdk(gw.v1) as client, pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="gemini-embed", input=[[1, 2, 3]])
    body: Any = caught.value.body
    assert body["param"] == "input[0]"
    assert "takes text only" in body["message"]


def test_default_body_limit_takes_a_multi_image_request(
    gw: RunningGateway, upstream: ScriptedUpstream
) -> None:
    """Three 7 MiB data URLs (21 MiB of JSON) go through under the default limit."""
    assert ServerConfig().max_request_bytes >= 20 * MiB
    image = "data:image/png;base64," + "A" * (7 * MiB)
    parts: Any = [{"type": "image_url", "image_url": {"url": image}} for _ in range(3)]
    with sdk(gw.v1) as client:
        answer = client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": parts}]
        )
    assert answer.choices[0].message.content == TEXT
    assert len(upstream.last["messages"][0]["content"]) == 3
