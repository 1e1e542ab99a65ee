"""A batch job stops on a run of failures no retry can fix, and resumes after the fix.

Issue 23, defect 9: with every vector the wrong length, ``laneway batch``
sent all 188 calls of a 3,000-item corpus and recorded 3,000 failures.
"""

from __future__ import annotations

import asyncio

import pytest

from laneway import Laneway
from laneway.batch.jobdir import FAILURES
from laneway.batch.results import ItemError, ItemResult
from laneway.batch.streak import Streak, unfixable
from laneway.cli.main import main
from laneway.core.errors import BatchStopped
from tests.batch.support import collect, embed_config, texts
from tests.batch.test_cli import write_config, write_corpus
from tests.engine.spy import sim_hits
from tests.helpers import unique_spec

CORPUS = 3000
PER_CALL = 16
CALLS = -(-CORPUS // PER_CALL)
WINDOW = 4


def test_a_length_the_source_never_answers_stops_the_job_and_the_fixed_pin_resumes_it(
    sim, tmp_path, capsys
) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", CORPUS)
    spec = unique_spec("dims=12")
    config = write_config(tmp_path / "laneway.yaml", sim, spec, max_batch_items=PER_CALL)
    out = tmp_path / "out.jsonl"
    argv = ["batch", "emb", str(corpus), "-o", str(out), "--config", str(config)]
    assert main([*argv, "--max-concurrency", str(WINDOW)]) == 1
    sent = asyncio.run(sim_hits(sim, spec))
    assert sent <= 5 + WINDOW, f"{sent} of {CALLS} calls sent on a failure every call meets"
    err = capsys.readouterr().err
    assert "calls in a row failed alike, and no retry can fix it" in err
    assert "give the lane a model that answers 8, or pin dimensions: 12" in err
    assert "not in retry_on" not in err and "dimension is never retried" in err
    assert f"{CORPUS} of {CORPUS} items have no result" in err
    assert "output: not written" in err and not out.exists()
    config.write_text(config.read_text().replace("dimensions: 8", "dimensions: 12"))
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "started afresh: its vectors are 8 long (pinned dimensions)" in err
    assert "it held no result" in err
    assert asyncio.run(sim_hits(sim, spec)) == sent + CALLS
    assert len(out.read_bytes().splitlines()) == CORPUS


def test_a_source_gone_404_midway_stops_and_the_rerun_sends_only_what_is_unanswered(
    sim, tmp_path, capsys
) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", CORPUS)
    answered = 40
    gone = unique_spec(f"fail_after={answered},status=404")
    config = write_config(tmp_path / "gone.yaml", sim, gone, max_batch_items=PER_CALL)
    out = tmp_path / "out.jsonl"
    argv = ["batch", "emb", str(corpus), "-o", str(out), "--max-concurrency", "1"]
    assert main([*argv, "--config", str(config)]) == 1
    assert asyncio.run(sim_hits(sim, gone)) == answered + 5
    err = capsys.readouterr().err
    assert "upstream_rejected" in err and "check model and base_url" in err
    assert (tmp_path / "out.jsonl.job" / FAILURES).read_bytes() == b"", "no item failed for good"
    healed_spec = unique_spec("ok")
    healed = write_config(tmp_path / "healed.yaml", sim, healed_spec, max_batch_items=PER_CALL)
    assert main([*argv, "--config", str(healed)]) == 0
    assert asyncio.run(sim_hits(sim, healed_spec)) == CALLS - answered, "nothing answered re-sent"
    straight = tmp_path / "straight.jsonl"
    assert main(["batch", "emb", str(corpus), "-o", str(straight), "--config", str(healed)]) == 0
    assert out.read_bytes() == straight.read_bytes()


def test_stop_after_0_sends_every_call(sim, tmp_path) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 10 * PER_CALL)
    spec = unique_spec("dims=12")
    config = write_config(tmp_path / "laneway.yaml", sim, spec, max_batch_items=PER_CALL)
    argv = ["batch", "emb", str(corpus), "-o", str(tmp_path / "o.jsonl"), "--config", str(config)]
    assert main([*argv, "--stop-after", "0"]) == 1
    assert asyncio.run(sim_hits(sim, spec)) == 10


async def test_the_library_raises_batch_stopped_after_stop_after_calls(sim) -> None:
    spec = unique_spec("status=401")
    config = embed_config(sim, spec, max_batch_items=2)
    async with Laneway.from_settings(config, environ={}) as lw:
        job = lw.embed_many("emb", texts(40), max_concurrency=1, stop_after=3)
        with pytest.raises(BatchStopped, match="check the source's api_key") as stop:
            await collect(job)
    assert stop.value.calls == 3 and stop.value.unsent == 40
    assert "without a job directory, a rerun starts over" in str(stop.value)
    assert await sim_hits(sim, spec) == 3


def failure(index: int, status: int | None = 404, outcome: str = "404") -> ItemResult:
    attempt = {"source": "s", "outcome": outcome, "status": status}
    error = ItemError("upstream_rejected", "gone", (attempt,))
    return ItemResult(index, str(index), 0, error=error)


def success(index: int) -> ItemResult:
    return ItemResult(index, str(index), 0, [1.0])


@pytest.mark.parametrize(
    ("results", "stops"),
    [
        ([failure(0), failure(1)], True),
        ([failure(0), success(1)], False),
        ([failure(0, status=503, outcome="503")], False),
        ([failure(0, status=None, outcome="timeout")], False),
        ([failure(0, status=None, outcome="dimension")], True),
    ],
)
def test_only_a_call_whose_items_all_failed_alike_and_unfixably_counts(
    results: list[ItemResult], stops: bool
) -> None:
    assert (unfixable(results) is not None) is stops


def test_a_success_or_another_failure_breaks_the_run_and_only_the_stopping_one_is_kept_out() -> (
    None
):
    streak = Streak(limit=3)
    gone = unfixable([failure(0)])
    refused = unfixable([failure(0, status=401, outcome="401")])
    assert streak.add(0, gone, []) == [] and streak.add(1, gone, []) == []
    assert [call for call, _ in streak.add(2, None, [])] == [2] and streak.run == 0
    assert streak.add(10, gone, []) == [] and streak.add(11, gone, []) == []
    streak.add(9, None, [])
    assert streak.run == 2, "a call sent before the run began breaks no run"
    streak.add(12, None, [])
    assert streak.add(3, refused, []) == [] and streak.add(4, gone, []) == []
    assert not streak.stops
    streak.add(5, gone, [])
    streak.add(6, gone, [])
    assert streak.stops and streak.run == 3
    assert [call for call, _ in streak.add(7, None, [])] == [7]
    assert [call for call, _ in streak.add(8, refused, [])] == [8]
    assert streak.add(9, gone, []) == [] and streak.run == 4
    assert [call for call, _ in streak.release()] == [3], "the 401 is an item's own failure"
    assert streak.advice().startswith("the upstream does not know the model")
