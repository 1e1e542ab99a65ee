"""``POST /v1/messages/count_tokens`` with the ``anthropic`` SDK, as Claude Code asks it.

An Anthropic source counts (the sim answers its ``count_tokens``); an OpenAI
source cannot, so laneway answers its own estimate, marked as one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic import Anthropic

from laneway.app.composer import build_gateway
from laneway.config.models import LanewayConfig
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import ANTHROPIC, OPENAI, source
from tests.server.support import RunningGateway, serve_app

MESSAGES: Any = [{"role": "user", "content": "how many tokens is this prompt, roughly?"}]
DEAD = {"provider": "anthropic", "base_url": "http://127.0.0.1:9/v1", "model": "m", "max_tokens": 9}


@pytest.fixture(scope="module")
def gw(sim: RunningSim, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    lanes = {
        "claude": {"sources": [DEAD, source(sim, ANTHROPIC, unique_spec(""))]},
        "gpt": {"sources": [source(sim, OPENAI, unique_spec(""))]},
    }
    settings = LanewayConfig.model_validate({"lanes": lanes, "telemetry": {"url": "none"}})
    with serve_app(build_gateway(settings, {}, tmp_path_factory.mktemp("count"))) as running:
        yield running


def count(gw: RunningGateway, **body: Any) -> Any:
    with Anthropic(base_url=gw.url, api_key="unused", max_retries=0) as sdk:
        return sdk.messages.with_raw_response.count_tokens(**body).http_response


def test_an_anthropic_source_counts_past_a_dead_one(gw: RunningGateway) -> None:
    answer = count(gw, model="claude", messages=MESSAGES, system="be brief")
    assert answer.status_code == 200 and answer.headers["x-laneway-token-count"].startswith(
        "source "
    )
    data = answer.json()
    assert data == {"input_tokens": data["input_tokens"]} and data["input_tokens"] > 0


def test_a_lane_without_an_anthropic_source_answers_a_marked_estimate(gw: RunningGateway) -> None:
    answer = count(gw, model="gpt", messages=MESSAGES)
    assert answer.status_code == 200 and answer.headers["x-laneway-token-count"] == "estimate"
    assert answer.json() == {"input_tokens": 10, "laneway_estimate": True}  # 40 characters / 4


def test_thinking_output_config_and_cache_control_are_taken(gw: RunningGateway) -> None:
    extra = {"output_config": {"effort": "low"}, "cache_control": {"type": "ephemeral"}}
    thinking: Any = {"type": "enabled", "budget_tokens": 2048}
    for lane in ("claude", "gpt"):
        answer = count(gw, model=lane, messages=MESSAGES, thinking=thinking, extra_body=extra)
        assert answer.status_code == 200 and answer.json()["input_tokens"] > 0


def test_the_sdk_reads_the_count(gw: RunningGateway) -> None:
    with Anthropic(base_url=gw.url, api_key="unused", max_retries=0) as sdk:
        assert sdk.messages.count_tokens(model="gpt", messages=MESSAGES).input_tokens == 10


def test_a_field_count_tokens_does_not_take_is_a_400_naming_it(gw: RunningGateway) -> None:
    with (
        Anthropic(base_url=gw.url, api_key="unused", max_retries=0) as sdk,
        pytest.raises(anthropic.BadRequestError) as refused,
    ):
        sdk.messages.count_tokens(model="gpt", messages=MESSAGES, extra_body={"stream": True})
    assert "stream" in str(refused.value)
