"""The plan after a cut, as plain functions: no loop, no clock, no upstream (issue 25)."""

from __future__ import annotations

import pytest

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.types import ChatChunk
from laneway.engine.continuation import ContinuationPlan, ContinuingSource, Opening, Splice

SOURCES = [
    ContinuingSource("first", False),
    ContinuingSource("prefill", True),
    ContinuingSource("plain", False),
]


def chunk(text: str, finish: str | None = None) -> ChatChunk:
    raw = {"id": "a", "choices": [{"index": 0, "delta": {"content": text}}]}
    return ChatChunk(content=text, finish_reason=finish, raw=raw)


def continuing(
    plan: ContinuationPlan, *, tool_deltas: bool = False, expired: bool = False
) -> list[str]:
    return plan.continuing(SOURCES, {"first"}, tool_deltas=tool_deltas, expired=expired)


def test_a_lane_without_continue_on_cut_ends_honestly() -> None:
    assert continuing(ContinuationPlan(False)) == []


def test_continue_on_cut_goes_on_only_on_untried_prefill_sources() -> None:
    assert continuing(ContinuationPlan(True)) == ["prefill"]


def test_restart_goes_on_anywhere_untried_until_tool_deltas_were_sent() -> None:
    assert continuing(ContinuationPlan("restart")) == ["prefill", "plain"]
    assert continuing(ContinuationPlan("restart"), tool_deltas=True) == ["prefill"]


def test_nothing_continues_past_the_deadline() -> None:
    assert continuing(ContinuationPlan("restart"), expired=True) == []


def test_a_resumed_answer_is_restarted_whatever_the_lane_says() -> None:
    plan = ContinuationPlan(False, resuming=True)
    assert plan.mode == "restart"
    assert continuing(plan) == ["prefill", "plain"]
    assert plan.opening(accepts_prefill=True) is Opening.SPLICE


def test_a_prefill_source_gets_the_prefill_and_another_is_spliced() -> None:
    plan = ContinuationPlan(True)
    assert plan.opening(accepts_prefill=True) is Opening.PREFILL
    assert plan.opening(accepts_prefill=False) is Opening.SPLICE


@pytest.mark.parametrize(
    ("mode", "kind", "splices"),
    [
        ("restart", FailureKind.REJECTED, True),
        ("restart", FailureKind.STATUS, False),
        (True, FailureKind.REJECTED, False),
    ],
)
def test_a_refused_prefill_is_asked_again_without_it_only_under_restart(
    mode: bool | str, kind: FailureKind, splices: bool
) -> None:
    plan = ContinuationPlan(mode)  # type: ignore[arg-type]
    assert plan.splice_after_refusal(AttemptFailure(kind, "no")) is splices


def test_a_later_lane_resumes_only_under_restart_and_without_tool_deltas() -> None:
    assert ContinuationPlan("restart").hands_over(tool_deltas=False)
    assert ContinuationPlan(False, resuming=True).hands_over(tool_deltas=False)
    assert not ContinuationPlan(True).hands_over(tool_deltas=False)
    assert not ContinuationPlan("restart").hands_over(tool_deltas=True)


def test_a_splice_holds_the_repeat_back_and_forwards_from_where_the_caller_is() -> None:
    splice = Splice("Hello wor")
    assert splice.take(chunk("Hel")) is None
    assert splice.take(chunk("lo ")) is None
    taken = splice.take(chunk("world"))
    assert taken is not None and taken.content == "ld"
    assert taken.raw is not None and taken.raw["choices"][0]["delta"]["content"] == "ld"
    after = splice.take(chunk("!"))
    assert after is not None and after.content == "!"


def test_a_splice_refuses_an_answer_that_departs_or_ends_short() -> None:
    with pytest.raises(AttemptFailure, match="differs") as departed:
        Splice("Hello").take(chunk("Help"))
    assert departed.value.kind == FailureKind.DIVERGED
    with pytest.raises(AttemptFailure, match="shorter"):
        Splice("Hello").take(chunk("Hel", finish="stop"))
