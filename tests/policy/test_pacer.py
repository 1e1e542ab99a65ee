"""AIMD: multiplicative cut on overload, additive growth only while the limit is in use."""

from hypothesis import given, settings
from hypothesis import strategies as st

from laneway.policy.outcome import Verdict
from laneway.policy.pacer import Pacer, PacerLimits
from laneway.policy.waits import Admit, Wait

LIMITS = PacerLimits(min=1, max=8, initial=4, cut_factor=0.5)


def fill(pacer: Pacer) -> None:
    while isinstance(pacer.gate(), Admit):
        pacer.take()


def test_over_the_limit_a_pick_waits_for_a_release() -> None:
    pacer = Pacer(LIMITS)
    fill(pacer)
    assert pacer.in_flight == 4
    assert pacer.gate() == Wait(float("inf"), "concurrency")
    pacer.leave(Verdict.FAILED, started=0.0, now=1.0)
    assert pacer.gate() == Admit()


def test_a_429_halves_the_limit_once_per_overload() -> None:
    pacer = Pacer(LIMITS)
    fill(pacer)
    pacer.leave(Verdict.THROTTLED, started=0.0, now=1.0)
    assert pacer.limit == 2.0
    pacer.leave(Verdict.THROTTLED, started=0.5, now=1.1)
    assert pacer.limit == 2.0, "an attempt started before the cut is the same overload"
    pacer.take()
    pacer.leave(Verdict.TIMED_OUT, started=1.2, now=2.0)
    assert pacer.limit == 1.0


def test_growth_needs_the_limit_in_use() -> None:
    pacer = Pacer(LIMITS)
    pacer.take()
    pacer.leave(Verdict.OK, started=0.0, now=1.0)
    assert pacer.limit == 4.0, "one attempt in flight of four is not a reason to grow"
    fill(pacer)
    pacer.leave(Verdict.OK, started=0.0, now=1.0)
    assert pacer.limit == 4.25


def test_give_back_changes_nothing_but_the_count() -> None:
    pacer = Pacer(LIMITS)
    pacer.take()
    pacer.give_back()
    assert (pacer.in_flight, pacer.limit) == (0, 4.0)


events = st.lists(
    st.sampled_from(["take", Verdict.OK, Verdict.THROTTLED, Verdict.TIMED_OUT, Verdict.FAILED]),
    max_size=200,
)


@settings(deadline=None)
@given(
    low=st.integers(1, 5),
    span=st.integers(0, 20),
    cut=st.floats(0.05, 0.95),
    steps=events,
)
def test_the_limit_stays_within_min_and_max(low, span, cut, steps) -> None:
    pacer = Pacer(PacerLimits(min=low, max=low + span, cut_factor=cut))
    for now, step in enumerate(steps):
        if step == "take":
            pacer.take()
        elif pacer.in_flight:
            pacer.leave(step, started=float(now) - 0.5, now=float(now))
        assert low <= pacer.limit <= low + span
        assert pacer.in_flight >= 0
