"""Azure OpenAI: deployment URLs, the api-key header, content filters read as OpenAI's."""

from __future__ import annotations

import orjson
import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.core.messages import ChatMessage
from laneway.core.types import ChatRequest
from laneway.errors import UpstreamRejected
from laneway.providers.azure import AzureOpenAIProvider
from laneway.sim import RunningSim
from tests.helpers import unique_spec

HI: list[ChatMessage] = [{"role": "user", "content": "hi"}]
ROOT = "https://res.openai.azure.com"


def test_deployment_urls_and_key_header() -> None:
    provider = AzureOpenAIProvider(ROOT, "gpt4o-prod", "secret", "2024-10-21")
    http = provider.chat_request(ChatRequest(HI, {"anthropic": {"top_k": 1}}), stream=False)
    assert (
        http.url == f"{ROOT}/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"
    )
    assert http.headers["api-key"] == "secret" and "authorization" not in http.headers
    assert "anthropic" not in orjson.loads(http.body)
    v1 = AzureOpenAIProvider(f"{ROOT}/", "gpt4o-prod", "secret", "v1")
    assert (
        v1.chat_request(ChatRequest(HI), stream=False).url == f"{ROOT}/openai/v1/chat/completions"
    )


def lane(sim: RunningSim, spec: str, **source: object) -> Laneway:
    body = {"provider": "azure", "base_url": f"{sim.base_url}/b/{spec}", "model": "prod", **source}
    config = LanewayConfig.model_validate({"lanes": {"lane": {"sources": [body]}}})
    return Laneway.from_settings(config, environ={"AZURE_KEY": "k"})


async def test_answer_carries_azure_filter_results(sim) -> None:
    async with lane(sim, unique_spec("ok"), api_key="os.environ/AZURE_KEY") as lw:
        answer = await lw.chat("lane", HI)
    assert answer.content == "sim answer w2 w3 w4" and answer.model == "prod"
    assert (
        answer.raw["prompt_filter_results"][0]["content_filter_results"]["hate"]["filtered"]
        is False
    )


async def test_content_filter_is_the_openai_rejection(sim) -> None:
    async with lane(sim, unique_spec("content_filter"), api_key="k") as lw:
        with pytest.raises(UpstreamRejected) as err:
            await lw.chat("lane", HI)
    error = (err.value.body or {})["error"]
    assert (error["code"], error["type"], error["param"]) == (
        "content_filter",
        "invalid_request_error",
        "prompt",
    )
    assert error["innererror"]["content_filter_result"]["violence"]["filtered"] is True
    assert err.value.status == 400


async def test_without_a_key_azure_refuses(sim) -> None:
    async with lane(sim, unique_spec("ok")) as lw:
        with pytest.raises(UpstreamRejected) as err:
            await lw.chat("lane", HI)
    assert err.value.status == 401
