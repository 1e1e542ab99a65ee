"""Status verdicts from the hour (issue 23, defect 16: 4 of 4 failed an hour ago read OK)."""

from __future__ import annotations

from laneway.core.types import Attempt
from laneway.engine.standing import LaneStanding, SourceStanding
from laneway.metrics.history import History
from laneway.server.status_view import status_data
from tests.metrics.test_history import T0, record


def standing() -> LaneStanding:
    source = SourceStanding(
        "a", "openai", "m", (), 1.0, "credible", "closed", None, None, 0.0, None, None, True
    )
    return LaneStanding("l", "chat", (), False, (source,))


def verdict_after(history: History, later: float) -> tuple[str, list[str]]:
    lane = status_data([standing()], history, T0 + later, {})["lanes"][0]
    return lane["verdict"], lane["reasons"]


def test_a_lane_whose_calls_of_the_hour_all_failed_is_not_ok() -> None:
    """Failed before: the verdict read only the last minute, so it was ``ok``."""
    history = History()
    failed = (Attempt("a", "503", 0.1, status=503),)
    for n in range(4):
        history.observe(record(T0 + n, attempts=failed, error="upstream_error"), None)
    verdict, reasons = verdict_after(history, 50 * 60)
    assert verdict == "warn"
    assert reasons == ["4 of 4 calls failed in the last hour (upstream_error 4)"]


def test_a_lane_whose_calls_of_the_hour_succeeded_is_ok() -> None:
    history = History()
    for n in range(4):
        history.observe(record(T0 + n), None)
    assert verdict_after(history, 50 * 60) == ("ok", [])
