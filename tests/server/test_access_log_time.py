"""The access log's timestamps: the second's text made once, the same text as ``datetime``'s."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from laneway.server.access_log import iso_millis


def written_by_datetime(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, dt.UTC).isoformat(timespec="milliseconds")


@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False))
def test_any_time_reads_as_datetime_writes_it(unix: float) -> None:
    assert iso_millis(unix) == written_by_datetime(unix)


def test_the_edges_of_a_second_and_a_millisecond() -> None:
    base = 1_796_345_600.0
    for unix in (
        base,
        base + 0.0005,
        base + 0.9995,
        base + 0.9999996,
        base - 0.0000004,
        1_800_000_000.123,
        0.0,
    ):
        assert iso_millis(unix) == written_by_datetime(unix), unix
