"""Deadlines as absolute instants and Retry-After parsing, on a fake clock."""

from email.utils import formatdate

from laneway.core.clock import FakeClock
from laneway.core.retry_after import parse_retry_after
from laneway.policy.deadline import Deadline


def test_deadline_is_absolute() -> None:
    clock = FakeClock()
    deadline = Deadline.after(clock.now(), 5.0)
    clock.advance(0.25)
    assert deadline.remaining(clock.now()) == 4.75
    assert not deadline.expired(clock.now())
    clock.advance(5.0)
    assert deadline.expired(clock.now())


def test_caller_deadline_tightens_lane_deadline() -> None:
    lane = Deadline.after(0.0, 28.0)
    assert lane.earliest(Deadline.after(0.0, 10.0)).at == 10.0
    assert lane.earliest(Deadline.after(0.0, 30.0)).at == 28.0
    assert lane.earliest(None) is lane


def test_retry_after_forms() -> None:
    clock = FakeClock()
    assert parse_retry_after({"retry-after": "2"}, clock.wall()) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}, clock.wall()) == 1.5
    date = formatdate(clock.wall() + 30, usegmt=True)
    waited = parse_retry_after({"retry-after": date}, clock.wall())
    assert waited is not None and 29.0 <= waited <= 30.0
    assert parse_retry_after({"retry-after": "soon"}, clock.wall()) is None
    assert parse_retry_after({"retry-after": "-1"}, clock.wall()) is None
    assert parse_retry_after({}, clock.wall()) is None
