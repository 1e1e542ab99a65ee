"""Structured output: schema sent, answer validated, re-asked, tallied, never blamed."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from laneway import Laneway
from laneway.app import build_engine
from laneway.core.messages import ChatMessage
from laneway.core.records import CallRecord
from laneway.core.types import ChatRequest
from laneway.engine.structured import response_format, validate
from laneway.errors import DeadlineExceeded, RequestInvalid, ResultInvalid
from laneway.http import AiohttpTransport
from laneway.sim._answers import JSON_WRONG
from tests.engine.spy import SpyTransport, sim_hits
from tests.helpers import one_lane, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

ASK: list[ChatMessage] = [{"role": "user", "content": "What is the answer?"}]


class Answer(BaseModel):
    answer: str


class Collect:
    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


async def test_valid_after_one_reask(sim) -> None:
    spy = SpyTransport()
    config = one_lane(sim, unique_spec("json_after=1"))
    async with Laneway.from_settings(config, environ={}, transport=spy) as lw:
        result = await lw.structured("lane", ASK, schema=Answer)
    assert result.value == Answer(answer="sim answer") and result.asks == 2
    first, second = spy.bodies
    assert first["response_format"] == response_format(Answer, strict=False)
    assert second["messages"][1] == {"role": "assistant", "content": JSON_WRONG}
    reask = second["messages"][2]
    assert reask["role"] == "user" and "- answer: Field required" in reask["content"]
    # the sim counts a token per four characters of the prompt, plus one, and one per answer
    prompts = [sum(len(m["content"]) for m in body["messages"]) // 4 + 1 for body in spy.bodies]
    assert result.usage.prompt_tokens == sum(prompts)
    assert result.usage.completion_tokens == 2
    assert [a.outcome for a in result.attempts] == ["ok", "ok"]


async def test_exhausted_reasks_raise_result_invalid_with_the_last_output(sim) -> None:
    spec = unique_spec("json_after=9")
    sink = Collect()
    engine = build_engine(one_lane(sim, spec), {}, transport=AiohttpTransport(), observers=[sink])
    with pytest.raises(ResultInvalid, match="did not match Answer after 3 ask") as err:
        await engine.structured("lane", ChatRequest(list(ASK)), Answer, reasks=2)
    await engine.aclose()
    assert err.value.output == JSON_WRONG
    assert err.value.errors == ("answer: Field required",)
    assert len(err.value.attempts) == 3 and await sim_hits(sim, spec) == 3
    assert [(r.outcome, r.error) for r in sink.records] == [("ok", None)] * 3


async def test_zero_reasks_asks_once(sim) -> None:
    spec = unique_spec("json_after=1")
    async with Laneway.from_settings(one_lane(sim, spec), environ={}) as lw:
        with pytest.raises(ResultInvalid):
            await lw.structured("lane", ASK, schema=Answer, reasks=0)
        with pytest.raises(RequestInvalid, match="reasks"):
            await lw.structured("lane", ASK, schema=Answer, reasks=-1)
    assert await sim_hits(sim, spec) == 1


@in_virtual_time
async def test_one_deadline_covers_every_ask(vsim: VirtualSim) -> None:
    config = one_lane(vsim, unique_spec("json_after=9,sleep=0.15"), deadline="0.4s")
    async with vsim.laneway(config) as lw:
        with pytest.raises(DeadlineExceeded, match="deadline of 400ms passed during ask") as err:
            await lw.structured("lane", ASK, schema=Answer, reasks=5)
    assert [a.outcome for a in err.value.attempts] == ["ok", "ok", "deadline"], "asks at 0, .15, .3"
    assert err.value.deadline == pytest.approx(0.4) and err.value.elapsed == pytest.approx(0.4)


async def test_invalid_answers_are_not_cached_but_valid_ones_are(sim) -> None:
    invalid_spec = unique_spec("json_after=9")
    cached = {"ttl": "1h", "when": "temperature0"}
    async with Laneway.from_settings(one_lane(sim, invalid_spec, cache=cached), environ={}) as lw:
        for _ in range(2):
            with pytest.raises(ResultInvalid):
                await lw.structured("lane", ASK, schema=Answer, reasks=0, temperature=0)
    assert await sim_hits(sim, invalid_spec) == 2
    valid_spec = unique_spec("json_after=0")
    async with Laneway.from_settings(one_lane(sim, valid_spec, cache=cached), environ={}) as lw:
        first = await lw.structured("lane", ASK, schema=Answer, temperature=0)
        second = await lw.structured("lane", ASK, schema=Answer, temperature=0)
    assert (first.cache, second.cache) == ("miss", "hit")
    assert second.value == first.value and await sim_hits(sim, valid_spec) == 1


def test_validation_tolerates_a_code_fence_and_describes_errors() -> None:
    assert validate(Answer, '```json\n{"answer": "x"}\n```') == Answer(answer="x")
    errors = validate(Answer, "not json")
    assert isinstance(errors, tuple) and errors[0].startswith("(root): Invalid JSON")


def test_the_schema_name_is_made_acceptable_to_openai() -> None:
    class Odd(BaseModel):
        x: int

    Odd.__name__ = "Odd[int] model"
    assert response_format(Odd, strict=True)["json_schema"]["name"] == "Odd_int__model"
    assert response_format(Odd, strict=True)["json_schema"]["strict"] is True
