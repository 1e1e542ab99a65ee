"""The status page's hedge rate (issue 26): hedges per call over the minute and the hour,
won and lost, per lane and per source, across workers too."""

from __future__ import annotations

import orjson

from laneway.core.types import Attempt
from laneway.engine.standing import LaneStanding, SourceStanding
from laneway.metrics.history import History
from laneway.server.status_html import render_page
from laneway.server.status_view import status_data
from tests.metrics.test_history import T0, record

WON = (Attempt("a", "cancelled", 0.3), Attempt("b", "hedge_won", 0.1))
"""The first attempt was slow; its hedge on ``b`` answered first."""
LOST = (Attempt("a", "ok", 0.3), Attempt("b", "hedge_lost", 0.1))
"""The hedge on ``b`` was cancelled: the first attempt answered first."""
WORKER = {"pid": 1, "history": "this process"}


def standing() -> LaneStanding:
    sources = tuple(
        SourceStanding(
            name, "openai", "m", (), 1.0, "credible", "closed", None, None, 0.0, None, None, True
        )
        for name in ("a", "b")
    )
    return LaneStanding("l", "chat", (), False, sources)


def hedged_history(start: float = T0) -> History:
    """Ten calls, one whose hedge won and one whose hedge lost."""
    history = History()
    for n in range(8):
        history.observe(record(start + n), None)
    history.observe(record(start + 8, attempts=WON, source="b"), None)
    history.observe(record(start + 9, attempts=LOST), None)
    return history


def test_a_lane_shows_its_hedges_per_call_won_and_lost_over_the_minute_and_the_hour() -> None:
    data = status_data([standing()], hedged_history(), T0 + 20, {})["lanes"][0]
    for span in ("now", "hour"):
        figures = data[span]
        assert (figures["hedges"], figures["hedges_won"], figures["hedges_lost"]) == (2, 1, 1)
        assert figures["hedge_rate"] == 0.2
    assert sum(data["points"]["hedges"]) == 2
    first, second = data["sources"]
    assert first["now"]["hedges"] == 0, "a first attempt its hedge beat is no hedge"
    assert (second["now"]["hedges_won"], second["now"]["hedges_lost"]) == (1, 1)


def test_a_lane_without_hedges_reads_zero_and_a_quiet_span_no_rate() -> None:
    history = History()
    history.observe(record(T0), None)
    data = status_data([standing()], history, T0 + 20 * 60, {})["lanes"][0]
    assert (data["hour"]["hedges"], data["hour"]["hedge_rate"]) == (0, 0.0)
    assert (data["now"]["hedges"], data["now"]["hedge_rate"]) == (0, None)


def test_the_page_says_the_hedge_rate_where_a_lane_hedged() -> None:
    page = render_page(status_data([standing()], hedged_history(), T0 + 20, WORKER), 5.0).decode()
    assert "hedged 2 · 20.0% of calls · won 1, lost 1" in page
    quiet = History()
    quiet.observe(record(T0), None)
    assert (
        "hedged" not in render_page(status_data([standing()], quiet, T0 + 20, WORKER), 5.0).decode()
    )


def test_other_workers_hedges_count_on_the_page_of_the_worker_asked() -> None:
    ours, theirs = hedged_history(), hedged_history()
    dump = orjson.loads(orjson.dumps(theirs.dump()))
    merged = ours.merged([dump])
    data = status_data([standing()], merged, T0 + 20, {})["lanes"][0]
    assert (data["now"]["hedges"], data["now"]["hedge_rate"]) == (4, 0.2)
    assert (data["hour"]["hedges_won"], data["hour"]["hedges_lost"]) == (2, 2)
