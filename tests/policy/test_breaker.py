"""The breaker as a pure function of an outcome log and ``now``."""

from hypothesis import given, settings
from hypothesis import strategies as st

from laneway.core.clock import FakeClock
from laneway.core.outcomes import Mark
from laneway.policy.breaker import BreakerLimits
from laneway.policy.outcome import summary_of
from laneway.policy.waits import Admit, Probe, Wait
from tests.policy.marks import failures, log

LIMITS = BreakerLimits(failures=3, window=10.0, cooldown=5.0)


def gate(marks: tuple[Mark, ...], now: float) -> Admit | Probe | Wait:
    return LIMITS.gate(summary_of(marks, 60.0), now)


def test_closed_below_the_failure_count() -> None:
    assert gate(failures(0.0, 1.0), 2.0) == Admit()


def test_opens_on_failures_within_the_window_then_half_opens_after_cooldown() -> None:
    clock = FakeClock(start=0.0)
    marks = failures(0.0, 1.0, 2.0)
    assert gate(marks, clock.now()) == Wait(7.0, "breaker")
    clock.advance(6.999)
    assert isinstance(gate(marks, clock.now()), Wait)
    clock.advance(0.001)
    assert gate(marks, clock.now()) == Probe()


def test_failures_spread_wider_than_the_window_do_not_open() -> None:
    assert gate(failures(0.0, 6.0, 12.0), 12.5) == Admit()


def test_a_success_between_failures_resets_the_count() -> None:
    marks = log((0.0, "failed"), (1.0, "failed"), (1.5, "ok"), (2.0, "failed"))
    assert gate(marks, 2.1) == Admit()


def test_a_failed_probe_rearms_the_cooldown_and_a_success_closes() -> None:
    opened = failures(0.0, 1.0, 2.0)
    assert gate((*opened, *failures(8.0)), 9.0) == Wait(4.0, "breaker")
    assert gate((*opened, *log((8.0, "ok"))), 9.0) == Admit()


def test_throttling_and_neutral_outcomes_do_not_count() -> None:
    marks = log((0.0, "throttled"), (1.0, "throttled"), (2.0, "throttled"), (3.0, "neutral"))
    assert gate(marks, 3.0) == Admit()
    assert summary_of(marks, 60.0).last_failure is None


def test_last_failure_is_the_latest_counting_failure() -> None:
    marks = log((1.0, "failed"), (2.0, "timeout"), (3.0, "throttled"))
    assert summary_of(marks, 60.0).last_failure == 2.0


outcome_logs = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=100.0),
        st.sampled_from(["ok", "failed", "timeout", "throttled"]),
    ),
    max_size=20,
)


@settings(deadline=None)
@given(entries=outcome_logs, later=st.floats(min_value=0.0, max_value=200.0))
def test_an_open_breaker_never_admits_before_its_cooldown(entries, later) -> None:
    marks = log(*entries)
    reopens = LIMITS.reopens_at(summary_of(marks, 60.0))
    now = max((at for at, _ in entries), default=0.0) + later
    decided = gate(marks, now)
    if reopens is not None and now < reopens:
        assert isinstance(decided, Wait)
        assert decided.seconds == reopens - now
    if reopens is None:
        assert decided == Admit()
