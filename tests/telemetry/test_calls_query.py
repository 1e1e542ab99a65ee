"""``query_calls`` on both backends: one lane's calls since a time, oldest first, parsed."""

from __future__ import annotations

from laneway.core.records import CallRecord
from laneway.core.types import Attempt
from laneway.telemetry import CallSample, to_row
from tests.telemetry.conftest import Backend

NOW = 1_750_000_000.0


def record(lane: str, when: float, attempts: tuple[Attempt, ...], **fields: object) -> CallRecord:
    return CallRecord(when, lane, "chat", "ok", 0.3, attempts, **fields)  # type: ignore[arg-type]


RETRIED = (Attempt("a", "503", 0.01, status=503, waited=0.5), Attempt("a", "ok", 0.25, status=200))
ROWS = [
    to_row(record("engram", NOW - 10, RETRIED), None, "unpriced"),
    to_row(record("engram", NOW - 20, (Attempt("a", "ok", 0.4),), stream=True), None, "unpriced"),
    to_row(record("engram", NOW - 7200, (Attempt("a", "ok", 9.0),)), None, "unpriced"),
    to_row(record("other", NOW - 5, (Attempt("b", "ok", 0.1),)), None, "unpriced"),
    to_row(record("engram", NOW - 1, ()), None, "cache_hit"),
]


async def test_calls_of_one_lane_since_a_time_oldest_first(backend: Backend) -> None:
    store = backend.store()
    await store.open()
    try:
        await store.write_batch(ROWS)
        calls = await store.query_calls(NOW - 3600, "engram")
    finally:
        await store.close()
    assert [c.time for c in calls] == [NOW - 20, NOW - 10], "old, other-lane and cached left out"
    streamed, retried = calls
    assert isinstance(streamed, CallSample) and streamed.stream and streamed.kind == "chat"
    assert [a["outcome"] for a in retried.attempts] == ["503", "ok"]
    assert retried.attempts[0]["status"] == 503 and retried.attempts[1]["elapsed_ms"] == 250.0
    assert not retried.stream and retried.latency_ms == 300.0
