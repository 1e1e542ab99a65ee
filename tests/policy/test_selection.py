"""Candidate order, the yield rule, weighted turns, and panic."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laneway.policy.health import HealthPolicy
from laneway.policy.selection import (
    Candidate,
    Plan,
    SourceSpec,
    Try,
    Turns,
    WalkTime,
    failing_walk,
    order,
    panic_choice,
    peers,
    plan,
)
from laneway.policy.waits import Admit, Probe, Wait

HEALTH = HealthPolicy()
OPEN = Wait(5.0, "breaker")


def names(candidates) -> list[str]:
    return [c.name for c in candidates]


def source(name: str, health: float = 1.0, **kw) -> Candidate:
    return Candidate(name, health, kw.pop("gate", Admit()), **kw)


def test_credible_then_demoted_then_non_credible_then_priority() -> None:
    candidates = [
        source("junk", 0.1),
        source("tight", 0.3),
        source("backup", 0.9, priority=1),
        source("main", 0.9),
    ]
    assert names(order(candidates, Turns(), HEALTH)) == ["main", "backup", "tight", "junk"]


def test_a_source_failing_twice_yields_to_an_untried_one_at_least_half_as_healthy() -> None:
    candidates = [source("a", 0.8, failures=2), source("b", 0.4, priority=1)]
    assert names(order(candidates, Turns(), HEALTH)) == ["b", "a"]


def test_it_keeps_its_place_when_the_alternative_is_much_worse() -> None:
    candidates = [source("a", 0.3, failures=2), source("b", 0.1)]
    assert names(order(candidates, Turns(), HEALTH)) == ["a", "b"]


def test_one_failure_does_not_yield() -> None:
    candidates = [source("a", 0.9, failures=1), source("b", 0.9, priority=1)]
    assert names(order(candidates, Turns(), HEALTH)) == ["a", "b"]


def test_peers_take_turns_in_proportion_to_weight() -> None:
    turns = Turns()
    candidates = [source("a", weight=3.0), source("b", weight=1.0)]
    picked = []
    for _ in range(8):
        first = order(candidates, turns, HEALTH)[0].name
        picked.append(first)
        turns.took(first, peers(first, candidates, HEALTH))
    assert picked.count("a") == 6 and picked.count("b") == 2
    assert picked[0] == "a"


def test_equal_weights_start_with_the_first_listed() -> None:
    assert names(order([source("x"), source("y")], Turns(), HEALTH)) == ["x", "y"]


def test_plan_skips_blocked_and_open_sources_and_keeps_their_waits() -> None:
    pushed = Wait(2.0, "pushback")
    candidates = [source("a", blocked=pushed), source("b", gate=OPEN), source("c", gate=Probe())]
    result = plan(candidates, Turns(), HEALTH)
    assert result.tries == (Try("c", probe=True),)
    assert set(result.waits) == {pushed, OPEN}


def test_every_breaker_open_tries_the_least_recently_failed() -> None:
    candidates = [
        source("a", gate=OPEN, last_failure=9.0),
        source("b", gate=OPEN, last_failure=3.0),
    ]
    assert plan(candidates, Turns(), HEALTH).tries == (Try("b", panic=True),)


def test_a_single_source_lane_is_never_refused_for_its_failures() -> None:
    lone = [source("only", 0.0, gate=Wait(3600.0, "breaker"), last_failure=1.0, failures=9)]
    assert plan(lone, Turns(), HEALTH).tries == (Try("only", panic=True),)


def test_half_open_sources_probe_first_and_panic_stands_behind() -> None:
    candidates = [source("a", gate=Probe(), last_failure=1.0)]
    assert plan(candidates, Turns(), HEALTH).tries == (Try("a", probe=True), Try("a", panic=True))


gates = st.one_of(
    st.just(Admit()), st.just(Probe()), st.floats(0.1, 100.0).map(lambda s: Wait(s, "breaker"))
)
candidate_lists = st.lists(
    st.builds(
        Candidate,
        name=st.text("abcdefgh", min_size=1, max_size=3),
        health=st.floats(0.0, 1.0),
        gate=gates,
        priority=st.integers(0, 2),
        weight=st.floats(0.1, 5.0),
        blocked=st.none() | st.just(Wait(1.0, "pushback")),
        failures=st.integers(0, 3),
        last_failure=st.none() | st.floats(0.0, 100.0),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda c: c.name,
)


@settings(deadline=None)
@given(candidates=candidate_lists)
def test_an_open_breaker_is_tried_only_in_panic(candidates) -> None:
    result = plan(candidates, Turns(), HEALTH)
    by_name = {c.name: c for c in candidates}
    for tried in result.tries:
        if isinstance(by_name[tried.name].gate, Wait):
            assert tried.panic
            assert not any(isinstance(c.gate, Admit) for c in candidates)
    if all(c.blocked is None for c in candidates):
        assert result.tries, "some source is always tried when nothing is blocked locally"
    assert panic_choice(candidates) is None or len([t for t in result.tries if t.panic]) == 1


BACKOFF = Wait(0.3, "backoff", "main")


def test_a_call_waits_to_revisit_its_preferred_source_rather_than_spill_over() -> None:
    candidates = [source("main", revisit=BACKOFF, failures=1), source("backup", priority=1)]
    assert plan(candidates, Turns(), HEALTH) == Plan((), (BACKOFF,))


def test_a_source_to_revisit_does_not_stop_a_peer_that_ranks_first() -> None:
    turns = Turns()
    turns.took("main", [source("main"), source("peer")])
    candidates = [source("main", revisit=BACKOFF, failures=1), source("peer")]
    assert plan(candidates, turns, HEALTH) == Plan((Try("peer"),), (BACKOFF,))


def test_a_source_to_revisit_is_never_the_panic_choice() -> None:
    candidates = [source("main", gate=Probe(), revisit=BACKOFF, failures=1)]
    assert plan(candidates, Turns(), HEALTH) == Plan((), (BACKOFF,))


def test_a_source_set_aside_goes_after_every_other_whatever_its_rank() -> None:
    candidates = [source("main", set_aside=True, failures=1), source("junk", 0.1, priority=3)]
    assert names(order(candidates, Turns(), HEALTH)) == ["junk", "main"]


def test_a_mark_another_call_received_steers_without_blocking() -> None:
    candidates = [source("main", pushed_back=True), source("backup", priority=1)]
    assert plan(candidates, Turns(), HEALTH).tries == (Try("backup"), Try("main"))


@pytest.mark.parametrize(
    ("set_aside", "walk"),
    [(False, ["main", "main", "backup"]), (True, ["main", "backup", "main"])],
    ids=["error-status", "timeout-or-connect"],
)
def test_a_failing_call_walks_primary_then_fallback(set_aside: bool, walk: list[str]) -> None:
    sources = [SourceSpec("main"), SourceSpec("backup", priority=1)]
    assert failing_walk(sources, 3, HEALTH, set_aside=set_aside) == walk


def test_a_failing_call_alternates_between_peers() -> None:
    sources = [SourceSpec("a"), SourceSpec("b"), SourceSpec("c", priority=1)]
    assert failing_walk(sources, 4, HEALTH, set_aside=False) == ["a", "b", "a", "b"]


def test_a_backoff_that_cannot_fit_moves_the_walk_to_the_next_source() -> None:
    """Found by the oracle (tests/oracle): deadline 0.5 s, a 0.5 s backoff, two sources.

    The call moves to the fallback at once rather than wait a backoff that
    ends past its deadline; the walk said ``main, main``.
    """
    sources = [SourceSpec("main"), SourceSpec("backup", priority=1)]
    tight = WalkTime((0.5,), deadline=0.5, min_attempt=0.25)
    assert failing_walk(sources, 2, HEALTH, set_aside=False, time=tight) == ["main", "backup"]
    roomy = WalkTime((0.5,), deadline=1.0, min_attempt=0.25)
    assert failing_walk(sources, 2, HEALTH, set_aside=False, time=roomy) == ["main", "main"]
    alone = [SourceSpec("main")]
    assert failing_walk(alone, 2, HEALTH, set_aside=False, time=tight) == ["main"]
