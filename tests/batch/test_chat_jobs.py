"""Chat batch jobs: one call per item, structured answers through the re-ask ladder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from laneway import Laneway
from laneway.batch.schema import schema_model
from laneway.batch.streak import STOP_AFTER
from laneway.cli.main import main
from laneway.core.errors import BatchStopped, RequestInvalid
from tests.batch.support import collect
from tests.engine.spy import sim_hits
from tests.helpers import one_lane, sim_url, unique_spec

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


async def test_prompts_and_requests_come_back_in_order_with_usage_per_row(sim) -> None:
    config = one_lane(sim, unique_spec("ok"))
    items: list[str | dict[str, Any]] = [
        "first",
        {"id": "second", "messages": [{"role": "user", "content": "hi"}]},
    ]
    async with Laneway.from_settings(config, environ={}) as lw:
        job = lw.batch("lane", items, temperature=0)
        results = await collect(job)
    assert [r.id for r in results] == ["1", "second"]
    row = results[0].row()
    assert row["message"]["role"] == "assistant" and row["message"]["content"]
    assert row["usage"]["source"] == "provider" and row["attempts"] == 1
    assert row["cost"] == {"usd": None, "status": "unpriced"}
    assert job.tally.unpriced_calls == 2 and job.tally.priced_calls == 0


async def test_a_structured_batch_re_asks_until_the_answer_matches(sim) -> None:
    config = one_lane(sim, unique_spec("json_after=1"))
    schema = schema_model(ANSWER_SCHEMA, "answer")
    async with Laneway.from_settings(config, environ={}) as lw:
        results = await collect(lw.batch("lane", ["q1", "q2"], schema=schema))
    assert [r.row()["value"] for r in results] == [{"answer": "sim answer"}] * 2
    assert [r.row()["asks"] for r in results] == [2, 2]


async def test_answers_that_never_match_fail_their_items(sim) -> None:
    config = one_lane(sim, unique_spec("json_after=9"))
    schema = schema_model(ANSWER_SCHEMA, "answer")
    async with Laneway.from_settings(config, environ={}) as lw:
        job = lw.batch("lane", ["q1"], schema=schema, reasks=1)
        (result,) = await collect(job)
    assert result.error is not None and result.error.code == "result_invalid"
    assert "'answer' is a required property" in result.error.message


def test_a_schema_that_is_not_one_is_refused() -> None:
    with pytest.raises(RequestInvalid, match="not a valid JSON schema"):
        schema_model({"type": "no-such-type"}, "bad")


def test_the_command_runs_a_structured_prompt_set(sim, tmp_path: Path) -> None:
    config = tmp_path / "laneway.yaml"
    url = sim_url(sim, unique_spec("json_after=1"))
    config.write_text(f"lanes:\n  ask:\n    sources:\n      - base_url: {url}\n        model: m\n")
    schema = tmp_path / "answer.json"
    schema.write_bytes(orjson.dumps(ANSWER_SCHEMA))
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("what is one?\nwhat is two?\n")
    out = tmp_path / "answers.jsonl"
    argv = ["batch", "ask", str(prompts), "-o", str(out), "--config", str(config)]
    assert main([*argv, "--structured", str(schema), "--param", "temperature=0"]) == 0
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [(row["id"], row["value"]) for row in rows] == [
        ("1", {"answer": "sim answer"}),
        ("2", {"answer": "sim answer"}),
    ]


async def test_a_run_of_answers_that_never_match_stops_the_job_after_stop_after_calls(
    sim,
) -> None:
    spec = unique_spec("json_after=99")
    config = one_lane(sim, spec)
    schema = schema_model(ANSWER_SCHEMA, "answer")
    async with Laneway.from_settings(config, environ={}) as lw:
        job = lw.batch(
            "lane", [f"q{n}" for n in range(40)], schema=schema, reasks=1, max_concurrency=1
        )
        with pytest.raises(BatchStopped, match="check the schema against the prompt") as stop:
            await collect(job)
    assert stop.value.calls == STOP_AFTER
    assert await sim_hits(sim, spec) == STOP_AFTER * 2, "each stopped call made its one re-ask"
