"""The sliding quota window, the reference both stores follow. Virtual time only."""

from hypothesis import given, settings
from hypothesis import strategies as st

from laneway.core.clock import FakeClock
from laneway.state.window import Entry, SlidingWindow


def take(window: SlidingWindow, ticket: str, tokens: int, now: float) -> float:
    """Reserve under 3 rpm and 1000 tpm per minute."""
    return window.reserve(ticket, tokens, rpm=3, tpm=1000, window=60.0, now=now)


def test_rpm_full_waits_until_the_oldest_leaves() -> None:
    clock, window = FakeClock(), SlidingWindow()
    for ticket in "abc":
        assert take(window, ticket, 0, clock.now()) == 0
        clock.advance(1.0)
    assert take(window, "d", 0, clock.now()) == 57.0
    clock.advance(57.0)
    assert take(window, "d", 0, clock.now()) == 0


def test_tpm_settlement_frees_what_the_estimate_held() -> None:
    clock, window = FakeClock(), SlidingWindow()
    assert take(window, "a", 600, clock.now()) == 0
    clock.advance(10.0)
    assert take(window, "b", 600, clock.now()) == 50.0
    window.settle("a", 40)
    assert take(window, "b", 600, clock.now()) == 0
    assert window.tokens == 640


def test_release_returns_the_request_and_its_tokens() -> None:
    window = SlidingWindow()
    take(window, "a", 300, 0.0)
    window.release("a")
    assert (len(window.entries), window.tokens) == (0, 0)


def test_a_request_larger_than_the_quota_runs_alone() -> None:
    window = SlidingWindow()
    assert take(window, "big", 5000, 0.0) == 0
    assert window.tokens == 1000
    assert take(window, "next", 1, 1.0) == 59.0


def test_merged_entries_keep_time_order() -> None:
    window = SlidingWindow()
    take(window, "new", 0, 10.0)
    window.add(Entry("older", 5.0, 0))
    assert [e.ticket for e in window.entries.values()] == ["older", "new"]


operations = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "settle", "release", "advance"]),
        st.integers(0, 9),
        st.integers(0, 700),
    ),
    max_size=80,
)


@settings(deadline=None)
@given(steps=operations)
def test_the_window_never_holds_more_than_its_quota(steps) -> None:
    window, now = SlidingWindow(), 0.0
    for op, ticket, amount in steps:
        name = f"t{ticket}"
        window.expire(60.0, now)
        before = window.tokens
        if op == "advance":
            now += amount / 10
        elif op == "reserve" and name not in window.entries:
            if take(window, name, amount, now) == 0:
                assert window.tokens == before + min(amount, 1000)
                window.release(name)
                assert window.tokens == before, "reserve then release nets to zero"
                take(window, name, amount, now)
        elif op == "settle":
            window.settle(name, amount)
        else:
            window.release(name)
        assert window.tokens == sum(e.tokens for e in window.entries.values())
        recent = [e for e in window.entries.values() if e.at > now - 60.0]
        assert len(recent) <= 3
