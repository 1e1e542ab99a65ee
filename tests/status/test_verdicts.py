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


def test_no_latency_figure_is_shown_above_the_enforced_deadline() -> None:
    """Failed before: calls cut at an 8 s deadline showed a p99 above 8 s (the bin's middle)."""
    history = History()
    for n in range(4):
        history.observe(record(T0 + n, latency=8.0, attempts=(Attempt("a", "ok", 8.0),)), None)
    lane = standing()
    cut = LaneStanding(lane.name, lane.kind, (), False, lane.sources, deadline=8.0)
    data = status_data([cut], history, T0 + 30, {})["lanes"][0]
    assert data["now"]["latency_p99"] == 8.0
    assert data["sources"][0]["now"]["latency_p99"] == 8.0
    assert max(p for p in data["points"]["latency_p99"] if p is not None) == 8.0
    plain = status_data([lane], history, T0 + 30, {})["lanes"][0]
    assert plain["now"]["latency_p99"] > 8.0, "the uncapped bin lies above the deadline"
