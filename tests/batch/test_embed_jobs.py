"""Embed batch jobs through the library: pacing, order, verification, resume, refusal."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from laneway import Laneway
from laneway.batch import JobMismatch
from laneway.batch.jobdir import CHECKPOINT, FAILURES, MANIFEST
from laneway.config.models import LanewayConfig
from laneway.core.errors import DeadlineExceeded
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from tests.batch.support import collect, embed_config, texts
from tests.engine.spy import sim_hits
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time


async def test_20000_items_with_a_limited_and_a_flaky_source_cause_no_429_storm(sim) -> None:
    limited = unique_spec("rpm=5")
    flaky = unique_spec("flaky=0.1,status=503,seed=7")
    sources = [
        {"name": "limited", "base_url": sim_url(sim, limited), "model": "e", "rpm": 5},
        {"name": "flaky", "base_url": sim_url(sim, flaky), "model": "e", "priority": 1},
    ]
    lane = {
        "kind": "embed",
        "dimensions": 8,
        "max_batch_items": 256,
        "retries": 8,
        "retry_on": [503, 429],
        "backoff": {"kind": "constant", "base": "1ms"},
        "breaker": {"failures": 32},
        "sources": sources,
    }
    config = LanewayConfig.model_validate({"lanes": {"emb": lane}})
    seen: list[Any] = []
    async with Laneway.from_settings(config, environ={}) as lw:
        job = lw.embed_many("emb", texts(20_000), max_concurrency=8, progress=seen.append)
        results = await collect(job)
    assert [r.index for r in results] == list(range(20_000))
    assert all(r.ok and len(r.embedding) == 8 for r in results)
    assert job.tally.vectors == 20_000 and job.tally.lengths == {8}
    limited_hits = await sim_hits(sim, limited)
    assert 1 <= limited_hits <= 5 + 1, "the quota gate held the limited source to its rpm"
    assert await sim_hits(sim, flaky) > 20_000 // 256 - 5, "the flaky source took the rest"
    assert {r.source for r in results} == {"limited", "flaky"}
    assert seen[-1].final and seen[-1].done == 20_000


@in_virtual_time
async def test_a_retry_after_slows_the_whole_job_and_cuts_its_window(vsim: VirtualSim) -> None:
    spec = unique_spec("fail_first=1,status=429,retry_after=1")
    config = embed_config(vsim, spec, max_batch_items=10, retries=1, retry_on=[429])
    async with vsim.laneway(config) as lw:
        job = lw.embed_many("emb", texts(80), max_concurrency=4)
        began = vsim.clock.now()
        results = await collect(job)
        took = vsim.clock.now() - began
    assert all(r.ok for r in results)
    assert took >= 0.9, "every call waited out the source's Retry-After, not only the 429'd one"
    assert job.window.limit < 4, "the job's window was cut by the 429"
    assert vsim.hits(spec) == 8 + 1


async def test_results_come_in_input_order_with_the_call_usage_on_its_first_row(sim) -> None:
    config = embed_config(sim, unique_spec("ok"), max_batch_items=4)
    async with Laneway.from_settings(config, environ={}) as lw:
        job = lw.embed_many("emb", texts(10))
        results = await collect(job)
    assert [r.id for r in results] == [str(n) for n in range(1, 11)]
    assert [r.call for r in results] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    owners = [r for r in results if r.usage is not None]
    assert [r.index for r in owners] == [0, 4, 8]
    assert all(r.usage is not None and r.usage.source == "provider" for r in owners)
    assert all(r.cost is not None and r.cost.status == "priced" for r in owners)
    assert job.tally.provider_calls == 3 and job.tally.priced_calls == 3
    rows = [r.row() for r in results]
    assert "usage" in rows[0] and "usage" not in rows[1]


async def test_a_rerun_continues_from_the_checkpoint_and_redoes_nothing(sim, tmp_path) -> None:
    spec = unique_spec("ok")
    config = embed_config(sim, spec, max_batch_items=5)
    async with Laneway.from_settings(config, environ={}) as lw:
        # One call at a time: the third call's results are read before a fourth is sent, so
        # the checkpoint holds exactly three calls however slow the host (with a window of
        # four, a loaded host could end every call before the reader stopped).
        first = lw.embed_many("emb", texts(30), job_dir=tmp_path, max_concurrency=1)
        async for result in first:
            if result.index == 12:
                break
    calls_done = len((tmp_path / CHECKPOINT).read_bytes().splitlines())
    assert calls_done == 3
    async with Laneway.from_settings(config, environ={}) as lw:
        again = lw.embed_many("emb", texts(30), job_dir=tmp_path)
        results = await collect(again)
    assert [r.index for r in results] == list(range(30))
    assert again.resumed == calls_done * 5
    assert await sim_hits(sim, spec) == 6, "finished calls were not redone"
    async with Laneway.from_settings(config, environ={}) as lw:
        finished = lw.embed_many("emb", texts(30), job_dir=tmp_path)
        assert [r.embedding for r in await collect(finished)] == [r.embedding for r in results]
    assert finished.resumed == 30


async def test_a_dimension_change_between_runs_is_refused(sim, tmp_path) -> None:
    spec = unique_spec("ok")
    async with Laneway.from_settings(embed_config(sim, spec, dimensions=16), environ={}) as lw:
        await collect(lw.embed_many("emb", texts(4), job_dir=tmp_path))
    async with Laneway.from_settings(embed_config(sim, spec, dimensions=32), environ={}) as lw:
        with pytest.raises(JobMismatch, match=r"16 long .* now pins dimensions 32"):
            lw.embed_many("emb", texts(4), job_dir=tmp_path)


async def test_an_unpinned_job_records_the_first_length_and_refuses_another_pin(
    sim, tmp_path
) -> None:
    spec = unique_spec("ok")
    async with Laneway.from_settings(embed_config(sim, spec), environ={}) as lw:
        await collect(lw.embed_many("emb", texts(4), job_dir=tmp_path))
    manifest = orjson.loads((tmp_path / MANIFEST).read_bytes())
    assert manifest["dimension"] == 8 and manifest["dimension_from"] == "first vector"
    async with Laneway.from_settings(embed_config(sim, spec, dimensions=12), environ={}) as lw:
        with pytest.raises(JobMismatch, match="8 long"):
            lw.embed_many("emb", texts(4), job_dir=tmp_path)


async def test_another_lane_model_or_input_is_refused(sim, tmp_path) -> None:
    spec = unique_spec("ok")
    async with Laneway.from_settings(embed_config(sim, spec), environ={}) as lw:
        await collect(lw.embed_many("emb", texts(4), job_dir=tmp_path))
        with pytest.raises(JobMismatch, match="the input changed"):
            lw.embed_many("emb", texts(5), job_dir=tmp_path)
    other = embed_config(sim, spec, model="another-model")
    async with Laneway.from_settings(other, environ={}) as lw:
        with pytest.raises(JobMismatch, match="another-model"):
            lw.embed_many("emb", texts(4), job_dir=tmp_path)


async def test_failed_items_are_listed_and_retried_only_when_asked(sim, tmp_path) -> None:
    broken = embed_config(sim, unique_spec("status=500"), max_batch_items=3)
    async with Laneway.from_settings(broken, environ={}) as lw:
        job = lw.embed_many("emb", texts(7), job_dir=tmp_path)
        results = await collect(job)
    assert [r.ok for r in results] == [False] * 7 and job.tally.failed == 7
    failures = [orjson.loads(line) for line in (tmp_path / FAILURES).read_bytes().splitlines()]
    assert [f["id"] for f in failures] == [str(n) for n in range(1, 8)]
    assert failures[0]["error"] == "upstream_error" and failures[0]["attempts"][0]["status"] == 500
    healed_spec = unique_spec("ok")
    healed = embed_config(sim, healed_spec, max_batch_items=3)
    async with Laneway.from_settings(healed, environ={}) as lw:
        plain = lw.embed_many("emb", texts(7), job_dir=tmp_path)
        assert not any(r.ok for r in await collect(plain))
        assert await sim_hits(sim, healed_spec) == 0, "a plain rerun does not retry failures"
        retried = lw.embed_many("emb", texts(7), job_dir=tmp_path, retry_failures=True)
        assert all(r.ok for r in await collect(retried))
    assert retried.tally.failed == 0 and (tmp_path / FAILURES).read_bytes() == b""


def vectors_answer(request: HttpRequest) -> HttpResponse:
    inputs = orjson.loads(request.body)["input"]
    data = [
        {"index": i, "embedding": [0.0, 0.0] if text == "zero" else [1.0, float(i)]}
        for i, text in enumerate(inputs)
    ]
    usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
    return HttpResponse(200, {}, orjson.dumps({"data": data, "model": "m", "usage": usage}))


async def test_an_all_zero_vector_fails_its_item_and_the_call_usage_moves_on() -> None:
    config = LanewayConfig.model_validate(
        {
            "lanes": {
                "emb": {"kind": "embed", "sources": [{"base_url": "http://mock/v1", "model": "m"}]}
            }
        }
    )
    transport = MockTransport(vectors_answer)
    async with Laneway.from_settings(config, environ={}, transport=transport) as lw:
        job = lw.embed_many("emb", ["zero", "b", "c"])
        results = await collect(job)
    assert results[0].error is not None and results[0].error.code == "vector_invalid"
    assert "every component is zero" in results[0].error.message
    assert results[1].ok and results[1].usage is not None and results[1].usage.prompt_tokens == 3
    assert job.tally.failed == 1 and job.tally.provider_tokens == 3


async def test_a_call_that_only_waited_at_the_gate_is_queued_again(sim, monkeypatch) -> None:
    config = embed_config(sim, unique_spec("ok"), max_batch_items=2)
    async with Laneway.from_settings(config, environ={}) as lw:
        real = lw.engine.embed
        refused: list[int] = []

        async def gate_bound_once(lane: str, request: Any, **kw: Any) -> Any:
            if not refused:
                refused.append(1)
                raise DeadlineExceeded("waited at the gate", lane=lane, attempts=(), elapsed=1.0)
            return await real(lane, request, **kw)

        monkeypatch.setattr(lw.engine, "embed", gate_bound_once)
        job = lw.embed_many("emb", texts(6))
        results = await collect(job)
    assert refused and all(r.ok for r in results) and job.tally.failed == 0
