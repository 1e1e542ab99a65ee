"""The official SDKs on their default retries against the gateway (issue 23, defect 2).

The OpenAI and Anthropic SDKs retry a 408, 409, 429 or 5xx twice by default
unless the answer says ``x-should-retry: false``. The gateway says so on every
answer whose lane spent its budget (``laneway.policy.spent.budget_spent``), so
a caller on SDK defaults makes no more upstream requests than ``laneway check``
bounds; an answer no upstream request went into keeps the SDK's retry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

from laneway.sim import RunningSim
from tests.helpers import hits, unique_spec
from tests.server.support import RunningGateway, config, serve_gateway, source

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]
FAILING = unique_spec("status=500")
TIMED_OUT = unique_spec("sleep=5")
RETRIED = {"retries": 1, "retry_on": [500], "backoff": {"kind": "constant", "base": "10ms"}}
THROTTLED = unique_spec("status=429,retry_after=5")


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes: dict[str, dict[str, Any]] = {
        "failing": {"sources": [source(sim, FAILING)], **RETRIED},
        "slow": {"sources": [source(sim, TIMED_OUT)], "deadline": "300ms"},
        "throttled": {"sources": [source(sim, THROTTLED)], "max_pushbacks": 1, "deadline": "2s"},
    }
    with serve_gateway(config(lanes)) as running:
        yield running


def test_the_openai_sdk_on_defaults_makes_only_the_lanes_requests(
    gw: RunningGateway, sim: RunningSim
) -> None:
    """Lane bound 2 (1 attempt + 1 retry); the SDK's 2 retries made it 6 before."""
    with OpenAI(base_url=gw.v1, api_key="unused") as sdk:
        assert sdk.max_retries == 2, "the SDK's default, which this test is about"
        with pytest.raises(openai.InternalServerError) as err:
            sdk.chat.completions.create(model="failing", messages=HELLO)
    assert err.value.response.headers["x-should-retry"] == "false"
    assert hits(sim, FAILING) == 2


def test_a_deadline_answer_tells_the_sdk_not_to_retry(gw: RunningGateway, sim: RunningSim) -> None:
    sdk = OpenAI(base_url=gw.v1, api_key="unused")
    with sdk, pytest.raises(openai.APIStatusError) as err:
        sdk.chat.completions.create(model="slow", messages=HELLO)
    assert err.value.status_code == 504
    assert err.value.response.headers["x-should-retry"] == "false"
    assert hits(sim, TIMED_OUT) == 1


def test_the_anthropic_sdk_on_defaults_makes_only_the_lanes_requests(
    gw: RunningGateway, sim: RunningSim
) -> None:
    before = hits(sim, FAILING)
    with anthropic.Anthropic(base_url=gw.url, api_key="unused") as sdk:
        assert sdk.max_retries == 2
        with pytest.raises(anthropic.InternalServerError):
            sdk.messages.create(
                model="failing", max_tokens=16, messages=[{"role": "user", "content": "hello"}]
            )
    assert hits(sim, FAILING) - before == 2


def test_retry_after_is_sent_only_when_a_retry_can_succeed(
    gw: RunningGateway, sim: RunningSim
) -> None:
    """Before: the upstream's ``Retry-After: 5`` went out beside ``x-should-retry: false``."""
    with OpenAI(base_url=gw.v1, api_key="unused", max_retries=0) as sdk:
        with pytest.raises(openai.RateLimitError) as called:
            sdk.chat.completions.create(model="throttled", messages=HELLO)
        with pytest.raises(openai.APIStatusError) as held:
            sdk.chat.completions.create(model="throttled", messages=HELLO)
    spent = called.value.response.headers
    assert spent["x-should-retry"] == "false" and "retry-after" not in spent
    local = held.value.response.headers
    assert held.value.status_code in (429, 503) and "x-should-retry" not in local
    assert 1 <= int(local["retry-after"]) <= 5, "nothing was sent: a retry after the wait can work"
    assert hits(sim, THROTTLED) == 1
