"""Spend on both backends: unknown stays NULL, estimates stay apart."""

from __future__ import annotations

import pytest

from laneway.core.records import CallMeta, CallRecord
from laneway.core.types import Attempt, Usage
from laneway.telemetry import SpendRow, TelemetryError, caller_hash, to_row
from tests.telemetry.conftest import Backend

NOW = 1_750_000_000.0
KNOWN = Usage(100, 40, 140, 10, None, source="provider")


def record(lane: str, usage: Usage, outcome: str = "ok", when: float = NOW) -> CallRecord:
    attempts = (Attempt("s", "ok" if outcome == "ok" else "503", 0.1, pushback=True),)
    return CallRecord(
        when, lane, "chat", outcome, 0.2, attempts, CallMeta("r", "team-a"), source="s", usage=usage
    )


ROWS = [
    to_row(record("priced", KNOWN), 0.5, "priced"),
    to_row(record("priced", Usage()), None, "usage_unknown"),
    to_row(record("priced", Usage(1, 1, 2, source="estimated")), 0.25, "estimated"),
    to_row(record("unpriced", KNOWN), None, "unpriced"),
    to_row(record("blind", Usage(), "error"), None, "usage_unknown"),
    to_row(record("old", KNOWN, when=NOW - 3600), 9.0, "priced"),
]


async def spend(backend: Backend, by: str = "lane") -> dict[str | None, SpendRow]:
    store = backend.store()
    await store.open()
    try:
        await store.write_batch(ROWS)
        return {row.group: row for row in await store.query_spend(NOW - 60, by)}
    finally:
        await store.close()


async def test_spend_by_lane(backend: Backend) -> None:
    rows = await spend(backend)
    assert set(rows) == {"priced", "unpriced", "blind"}
    assert rows["priced"] == SpendRow("priced", 3, 0, 100, 40, 10, 0.5, 1, 0, 1, 1, 0.25)
    assert rows["unpriced"] == SpendRow("unpriced", 1, 0, 100, 40, 10, None, 0, 1, 0, 0, None)
    assert rows["blind"] == SpendRow("blind", 1, 1, None, None, None, None, 0, 0, 1, 0, None)


async def test_spend_by_key_groups_hashed_callers(backend: Backend) -> None:
    rows = await spend(backend, "key")
    assert list(rows) == [caller_hash("team-a")] and rows[caller_hash("team-a")].calls == 5


async def test_spend_by_an_unknown_column_is_refused(backend: Backend) -> None:
    with pytest.raises(TelemetryError, match="cannot group spend"):
        await spend(backend, "cost_usd; DROP TABLE calls")
