"""The fault verdicts on hand-made answers: what a caller must get, and what misses it."""

from __future__ import annotations

import dataclasses

from laneway.chaos.asking import StreamedAnswer
from laneway.chaos.fault_report import RowResult
from laneway.chaos.fault_run import time_budget
from laneway.chaos.faults import FULL_ANSWER, Hits, judge_fault
from laneway.sim import FAULTS, fault_scenario
from laneway.sim.scenarios import FALLBACK, PRIMARY

USAGE = {"prompt_tokens": 7, "completion_tokens": 60, "total_tokens": 67}


def complete(*whose: str, elapsed: float = 0.1, start: float = 0.0) -> StreamedAnswer:
    return StreamedAnswer(start, elapsed, 200, FULL_ANSWER, whose, USAGE, done=True)


def missed(key: str, answers: list[StreamedAnswer], hits: Hits) -> list[str]:
    return [c.goal for c in judge_fault(fault_scenario(key), answers, hits) if not c.met]


def test_the_expected_answer_meets_every_check() -> None:
    assert missed("retry_after_once", [complete(PRIMARY, elapsed=2.1)], Hits(2, 0)) == []


def test_the_wrong_source_the_wrong_count_and_the_wrong_time_each_miss() -> None:
    misses = missed("retry_after_once", [complete(FALLBACK, elapsed=0.2)], Hits(1, 1))
    assert len(misses) == 4


def test_an_answer_without_done_or_usage_is_not_complete() -> None:
    cut = dataclasses.replace(complete(PRIMARY), done=False)
    bare = dataclasses.replace(complete(PRIMARY), usage=None)
    for answer in (cut, bare):
        assert missed("malformed_chunk", [answer], Hits(1, 0)) == [
            "the primary's answer, the bad event skipped"
        ]


def test_the_content_filter_row_wants_the_400_itself() -> None:
    refusal = StreamedAnswer(0.0, 0.1, 400, error="content_filter")
    assert missed("content_filter", [refusal], Hits(1, 0)) == []
    assert missed("content_filter", [complete(FALLBACK)], Hits(1, 1)) != []


def test_a_refused_primary_is_not_counted() -> None:
    assert missed("connection_refused", [complete(FALLBACK)], Hits(None, 1)) == []


def test_flapping_needs_the_primary_back_after_recovery() -> None:
    starts = [4.0 * n for n in range(20)]
    back = [complete(PRIMARY if at >= 64 else FALLBACK, start=at) for at in starts]
    never = [complete(FALLBACK, start=at) for at in starts]
    assert missed("flapping", back, Hits(5, 16)) == []
    assert missed("flapping", never, Hits(2, 20)) == [
        "every call from 70.0 s on answered by the primary"
    ]


def test_a_row_survives_its_json_round_trip() -> None:
    row = RowResult(fault_scenario("no_done"), [complete(PRIMARY)], Hits(1, 0), [])
    again = RowResult.from_json(row.as_json())
    assert again == row and again.outcome() == "primary answer, complete"


def test_the_run_is_bounded_by_its_rows() -> None:
    budget = time_budget(FAULTS, 1.0)
    assert 100 < budget < 15 * 120
    assert time_budget(FAULTS, 0.1) < budget
