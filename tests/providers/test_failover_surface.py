"""Failover never changes what a caller may ask: native fallbacks rescue tool calls.

A source that cannot carry a request is skipped (``unsupported`` in the
attempts, no retry spent, nothing sent); the request is refused before any
attempt only when no source of the lane can carry it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import RequestInvalid, UpstreamFailed
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import ANTHROPIC, GEMINI, OPENAI, Wire, hits, source

HI = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


RETRIED = {"retries": 3, "retry_on": [503], "backoff": {"base": 0}}
"""Enough retries to reach the fallback, whichever source admission moves to when."""


def lanes(sim: RunningSim, *sources: tuple[Wire, str], **policy: Any) -> LanewayConfig:
    built = [
        {**source(sim, wire, spec), "name": f"{wire.name}{index}", "priority": index}
        for index, (wire, spec) in enumerate(sources)
    ]
    return LanewayConfig.model_validate({"lanes": {"lane": {"sources": built, **policy}}})


@pytest.mark.parametrize("fallback", [ANTHROPIC, GEMINI], ids=lambda w: w.name)
async def test_native_fallback_rescues_a_tools_request(sim, fallback) -> None:
    down, spare = unique_spec("status=503"), unique_spec("ok")
    config = lanes(sim, (OPENAI, down), (fallback, spare), **RETRIED)
    async with Laneway.from_settings(config, environ={}) as lw:
        answer = await lw.chat("lane", HI, tools=TOOLS, tool_choice="required")
    assert answer.source == f"{fallback.name}1"
    *failed, rescued = [(a.source, a.outcome) for a in answer.attempts]
    assert failed and set(failed) == {("openai0", "503")}
    assert rescued == (f"{fallback.name}1", "ok")
    (call,) = answer.raw["choices"][0]["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "get_weather"
    assert orjson.loads(call["function"]["arguments"]) == {"city": "sim"}
    assert answer.raw["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("fallback", [ANTHROPIC, GEMINI], ids=lambda w: w.name)
async def test_native_fallback_rescues_a_streamed_tools_request(sim, fallback) -> None:
    down, spare = unique_spec("status=503"), unique_spec("ok")
    config = lanes(sim, (OPENAI, down), (fallback, spare), **RETRIED)
    async with Laneway.from_settings(config, environ={}) as lw:
        chat = lw.chat_stream("lane", HI, tools=TOOLS)
        chunks = [chunk async for chunk in chat]
    deltas = [
        d
        for c in chunks
        for choice in (c.raw or {}).get("choices") or []
        for d in (choice.get("delta") or {}).get("tool_calls") or []
    ]
    assert {d["index"] for d in deltas} == {0}
    assert "".join(d["function"].get("name") or "" for d in deltas) == "get_weather"
    arguments = "".join(d["function"].get("arguments") or "" for d in deltas)
    assert orjson.loads(arguments) == {"city": "sim"}
    assert chat.source == f"{fallback.name}1"


async def test_a_source_that_cannot_carry_the_request_is_skipped(sim) -> None:
    native, spare = unique_spec("ok"), unique_spec("ok")
    config = lanes(sim, (ANTHROPIC, native), (OPENAI, spare), retries=0)
    async with Laneway.from_settings(config, environ={}) as lw:
        for _ in range(2):
            answer = await lw.chat("lane", HI, seed=7)
            outcomes = [(a.source, a.outcome) for a in answer.attempts]
            assert outcomes == [("anthropic0", "unsupported"), ("openai1", "ok")]
            assert "seed" in answer.attempts[0].message
        plain = await lw.chat("lane", HI)
    assert plain.source == "anthropic0"
    assert await hits(sim, native) == 1


async def test_skips_spend_no_retry(sim) -> None:
    native, down = unique_spec("ok"), unique_spec("status=503")
    config = lanes(
        sim, (GEMINI, native), (OPENAI, down), retries=1, retry_on=[503], backoff={"base": 0}
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", HI, logit_bias={"50256": -100})
    outcomes = [a.outcome for a in err.value.attempts]
    assert outcomes.count("unsupported") == 1 and outcomes.count("503") == 2
    assert await hits(sim, native) == 0


async def test_refused_before_any_attempt_when_no_source_can_carry_it(sim) -> None:
    first, second = unique_spec("ok"), unique_spec("ok")
    config = lanes(sim, (ANTHROPIC, first), (GEMINI, second))
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(RequestInvalid) as err:
            await lw.chat("lane", HI, logprobs=True)
        with pytest.raises(RequestInvalid):
            lw.chat_stream("lane", HI, logprobs=True)
    assert err.value.field == "logprobs"
    assert "no source of lane lane can carry it" in str(err.value)
    assert await hits(sim, first) == await hits(sim, second) == 0
