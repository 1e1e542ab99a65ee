"""Unit tests of the sim's pure parts: spec parsing, stream scripts, rate buckets."""

from __future__ import annotations

import pytest

from laneway.sim import SpecError, parse_spec
from laneway.sim._answers import answer_pieces, plan_completion
from laneway.sim._faults import in_flap_outage
from laneway.sim._state import SimState
from laneway.sim._stream import (
    DONE_EVENT,
    MALFORMED_EVENT,
    Cut,
    Hold,
    Pause,
    Step,
    stream_steps,
)
from laneway.sim._waits import Releases


def script(spec: str, include_usage: bool = False) -> list[Step]:
    behaviour = parse_spec(spec)
    completion = plan_completion(behaviour, {"messages": []}, number=1, created=0)
    return list(stream_steps(behaviour, completion, include_usage))


def content_chunks(steps: list[Step]) -> int:
    return sum(1 for step in steps if isinstance(step, bytes) and b'"content":"' in step) - 1


def test_parse_spec_reads_flags_and_values():
    behaviour = parse_spec("ok,sleep=0.5,status=429,nousage,model=a/b,id=x")

    assert behaviour.sleep == 0.5
    assert behaviour.status == 429
    assert behaviour.nousage
    assert behaviour.model == "a/b"
    assert not behaviour.fails_conditionally


@pytest.mark.parametrize(
    "token", ["warp", "sleep", "nousage=1", "ok=1", "status=99", "flaky=2", "chunks=-1", "dims=0"]
)
def test_parse_spec_rejects_bad_tokens(token):
    with pytest.raises(SpecError) as caught:
        parse_spec(f"ok,{token}")

    assert caught.value.token == token


def test_answer_pieces_spell_the_answer():
    assert "".join(answer_pieces(4)) == "sim answer w2 w3"
    assert answer_pieces(1) == ("sim",)
    assert answer_pieces(0) == ()


def test_plain_stream_ends_with_done():
    steps = script("chunks=3")

    assert content_chunks(steps) == 3
    assert steps[-1] == DONE_EVENT
    assert not any(isinstance(step, Pause | Cut) for step in steps)


@pytest.mark.parametrize("sent", [0, 2])
def test_cut_after_ends_the_script_with_a_cut(sent):
    steps = script(f"cut_after={sent}")

    assert steps[-1] == Cut()
    assert content_chunks(steps) == sent


def test_cut_after_past_the_last_chunk_never_fires():
    assert script("chunks=2,cut_after=5")[-1] == DONE_EVENT


def test_stall_after_hangs_then_cuts():
    steps = script("stall_after=1")

    assert steps[-2:] == [Pause(3600.0), Cut()]
    assert content_chunks(steps) == 1


def test_hold_after_holds_then_goes_on_to_the_end():
    steps = script("hold_after=1,chunks=3")

    held = steps.index(Hold())
    assert content_chunks(steps[: held + 1]) == 1
    assert steps[-1] == DONE_EVENT and content_chunks(steps) == 3


def test_reset_forgets_releases_but_not_streams_still_held():
    releases = Releases()
    held = releases.event("held")
    releases.release("gone")
    releases.forget()

    assert not releases.event("gone").is_set()
    assert releases.event("held") is held


def test_nodone_hangs_after_the_usage_chunk():
    steps = script("nodone", include_usage=True)

    usage_chunk = steps[-2]
    assert steps[-1] == Pause(3600.0)
    assert isinstance(usage_chunk, bytes)
    assert b'"usage"' in usage_chunk
    assert DONE_EVENT not in steps


def test_malformed_event_follows_its_chunk():
    steps = script("malformed=1,chunks=2")

    before = steps[steps.index(MALFORMED_EVENT) - 1]
    assert isinstance(before, bytes)
    assert b'"delta":{"content":"sim"}' in before


def test_delay_paces_every_chunk_after_the_role_chunk():
    steps = script("delay=0.1,chunks=2,ttfb=0.3")

    assert steps[0] == Pause(0.3)
    assert steps.count(Pause(0.1)) == 3


def test_rate_bucket_rolls_over_after_sixty_seconds():
    state = SimState(started_at=0.0)

    assert state.take_rate_slot("b", 2, now=0.0) is None
    assert state.take_rate_slot("b", 2, now=10.0) is None
    assert state.take_rate_slot("b", 2, now=20.5) == 40
    assert state.take_rate_slot("b", 2, now=60.0) is None
    assert state.take_rate_slot("b", 2, now=60.5) == 10


def test_rate_bucket_retry_after_is_at_least_one_second():
    state = SimState(started_at=0.0)
    state.take_rate_slot("b", 1, now=0.0)

    assert state.take_rate_slot("b", 1, now=59.99) == 1


@pytest.mark.parametrize(
    ("elapsed", "down"), [(0.0, True), (4.9, True), (5.0, False), (9.9, False), (10.0, True)]
)
def test_flap_is_down_in_the_first_half_of_each_period(elapsed, down):
    assert in_flap_outage(elapsed, 5.0) is down


def test_hits_keep_count_and_relative_times():
    state = SimState(started_at=100.0)
    state.record_hit("s", 101.5)
    state.reset()
    state.record_hit("s", 102.0)

    assert state.hits() == {"s": {"count": 1, "times": [2.0]}}
    assert state.hits("other") == {"count": 0, "times": []}


@pytest.mark.parametrize(
    ("prefill", "rest"),
    [
        ("sim answer", " w2 w3"),
        ("sim ans", "wer w2 w3"),
        ("sim answer w2 w3", ""),
        ("another answer", "sim answer w2 w3"),
    ],
)
def test_a_prefill_that_begins_the_answer_gets_the_rest_of_it(prefill, rest):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": prefill}]
    completion = plan_completion(parse_spec("chunks=4"), {"messages": messages}, 1, 0)

    assert "".join(completion.pieces) == rest
