"""The status page's dollar figures (issue 23, defect 16: nonzero costs read "$0.0000")."""

from __future__ import annotations

import pytest

from laneway.server.status_html import usd


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.0, "$0"),
        (0.000012, "$0.000012"),
        (0.00004, "$0.000040"),
        (0.0123, "$0.0123"),
        (0.5, "$0.5000"),
        (1234.5, "$1,234.50"),
    ],
)
def test_a_nonzero_cost_never_reads_as_zero(value: float, shown: str) -> None:
    assert usd(value) == shown
