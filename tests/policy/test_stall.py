"""The stall verdict needs both: a long wait, and no progress anywhere in the lane."""

import math

from laneway.policy.stall import StallWatch

WATCH = StallWatch(after=5.0)


def test_disabled_never_stalls() -> None:
    assert StallWatch().due(0.0, None) == math.inf


def test_a_call_stalls_when_the_lane_never_progressed() -> None:
    assert not WATCH.stalled(4.9, call_started=0.0, last_progress=None)
    assert WATCH.stalled(5.0, call_started=0.0, last_progress=None)


def test_recent_progress_anywhere_keeps_a_long_wait_going() -> None:
    assert not WATCH.stalled(20.0, call_started=0.0, last_progress=16.0)
    assert WATCH.due(0.0, 16.0) == 21.0


def test_progress_before_the_call_does_not_extend_it() -> None:
    assert WATCH.due(10.0, 2.0) == 15.0
