"""How attempt failures count for health, the breaker and pacing."""

import asyncio
import importlib
import pkgutil
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from laneway import policy
from laneway.core.clock import FakeClock
from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.outcomes import EMPTY_RECORD, Mark, SourceRecord
from laneway.policy.outcome import Verdict, judge, summarize, summary_of
from laneway.state.admission.base import Ask
from laneway.state.admission.memory import MemoryStore


@pytest.mark.parametrize(
    ("failure", "verdict"),
    [
        (None, Verdict.OK),
        (AttemptFailure(FailureKind.STATUS, "503", status=503), Verdict.FAILED),
        (AttemptFailure(FailureKind.STATUS, "429", status=429), Verdict.THROTTLED),
        (AttemptFailure(FailureKind.TIMEOUT, "slow"), Verdict.TIMED_OUT),
        (AttemptFailure(FailureKind.CONNECT, "refused"), Verdict.FAILED),
        (AttemptFailure(FailureKind.MALFORMED, "html"), Verdict.FAILED),
        (AttemptFailure(FailureKind.REJECTED, "400", status=400), Verdict.NEUTRAL),
        (AttemptFailure(FailureKind.CONTEXT_LENGTH, "long", status=400), Verdict.NEUTRAL),
        (AttemptFailure(FailureKind.DIMENSION, "768 != 1024"), Verdict.NEUTRAL),
    ],
)
def test_judge(failure: AttemptFailure | None, verdict: Verdict) -> None:
    assert judge(failure) is verdict


def test_rejections_say_nothing_about_health() -> None:
    assert Verdict.NEUTRAL.health_sample is None
    assert not Verdict.NEUTRAL.opens_breaker
    assert not Verdict.NEUTRAL.logged


def test_throttling_lowers_health_and_cuts_pacing_but_never_opens_the_breaker() -> None:
    assert Verdict.THROTTLED.health_sample == 0.0
    assert Verdict.THROTTLED.overloads
    assert not Verdict.THROTTLED.opens_breaker
    assert Verdict.TIMED_OUT.overloads and Verdict.TIMED_OUT.opens_breaker


CODES = ("ok", "failed", "timeout", "throttled")


@given(
    st.lists(st.tuples(st.floats(0.0, 30.0), st.sampled_from(CODES)), min_size=1, max_size=90),
    st.integers(1, 8),
)
def test_a_summary_derived_mark_by_mark_equals_one_made_from_the_whole_log(
    steps: list[tuple[float, str]], size: int
) -> None:
    """What a settle does to a store's log: append one later mark, drop the oldest when full."""
    window: deque[Mark] = deque(maxlen=size)
    record = EMPTY_RECORD
    at = 0.0
    for gap, code in steps:
        at += gap
        window.append(Mark(at, code))
        record = record.successor(tuple(window), None)
        derived = summarize(record, 60.0)
        whole = summary_of(record.marks, 60.0)
        assert derived.failures == whole.failures
        assert derived.last_failure == whole.last_failure
        assert derived.newest == whole.newest
        assert derived.oks == whole.oks and derived.opening == whole.opening
        assert derived.weight == pytest.approx(whole.weight, abs=1e-9)
        assert derived.good == pytest.approx(whole.good, abs=1e-9)
    if size >= 2 and len(steps) >= 2:
        assert summarize(record, 60.0).steps > 0


def test_the_memory_store_links_each_record_to_the_one_it_replaced() -> None:
    """A store's settle makes a record whose summary comes from the previous one's."""
    clock = FakeClock()
    store = MemoryStore(clock)
    ask = Ask("a", "t")
    summaries = []
    for code in ("ok", "failed", "failed", "ok", "timeout"):
        clock.advance(1.0)
        record = asyncio.run(store.settle("lane", ask, None, code))
        summaries.append(summarize(record, 60.0))
        assert summaries[-1].failures == summary_of(record.marks, 60.0).failures
    assert [s.steps for s in summaries] == [0, 1, 2, 3, 4]


def test_a_record_holds_its_summaries_per_half_life() -> None:
    record = SourceRecord((Mark(1.0, "ok"), Mark(2.0, "failed")))
    short, long = summarize(record, 1.0), summarize(record, 60.0)
    assert short is summarize(record, 1.0) and long is summarize(record, 60.0)
    assert short.weight < long.weight
    assert set(record.summaries) == {1.0, 60.0}
    assert record == SourceRecord(record.marks)


def test_consecutive_logs_are_summarised_from_the_previous_summary() -> None:
    first = SourceRecord((Mark(1.0, "ok"), Mark(2.0, "failed")))
    second = first.successor((*first.marks, Mark(3.0, "failed")), 1.0)
    assert summarize(first, 60.0).steps == 0
    assert summarize(second, 60.0).steps == 1
    assert summarize(second, 60.0).failures == (2.0, 3.0)


def test_a_record_whose_prior_was_never_read_is_summarised_whole() -> None:
    first = SourceRecord((Mark(1.0, "ok"),))
    second = first.successor((*first.marks, Mark(2.0, "failed")), 1.0)
    assert summarize(second, 60.0).steps == 0


def test_a_log_out_of_time_order_is_summarised_whole() -> None:
    shuffled = SourceRecord((Mark(5.0, "failed"), Mark(1.0, "ok")))
    grown = shuffled.successor((*shuffled.marks, Mark(6.0, "failed")), None)
    summarize(shuffled, 60.0)
    assert summarize(grown, 60.0).failures == (5.0, 6.0)
    rolled = grown.successor((*grown.marks[1:], Mark(7.0, "ok")), 7.0)
    assert summarize(rolled, 60.0).steps == 0


def test_policy_modules_keep_no_mutable_state() -> None:
    """Policies are pure: no module-level dict, list, set or deque to remember things in."""
    mutable = (dict, list, set, bytearray, deque)
    held = [
        f"{info.name}.{name}"
        for info in pkgutil.iter_modules(policy.__path__)
        for name, value in vars(importlib.import_module(f"laneway.policy.{info.name}")).items()
        if isinstance(value, mutable) and not name.startswith("__")
    ]
    assert held == []
