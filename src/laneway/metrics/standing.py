"""Gauges of where each source stands now: its breaker state and health score.

Read at scrape time from the same standings the status page shows
(``laneway.engine.standing``, handed in as plain rows so this adapter
package depends on nothing above ``core``), never on a call's path. They are
the scraped worker's reading and are not summed across workers' snapshots:
with shared state every worker reads the same breaker and health.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric

BREAKER_STATES = {"closed": 0.0, "half-open": 1.0, "open": 2.0}
"""``laneway_breaker_state``'s values: 0 closed, 1 half-open (the next attempt probes), 2 open."""


@dataclass(frozen=True, slots=True)
class SourceGauge:
    """One source's reading: its lane, name, breaker state and health (``None``: untried)."""

    lane: str
    source: str
    breaker: str
    health: float | None


def standing_families(rows: Iterable[SourceGauge]) -> list[Metric]:
    """``laneway_breaker_state{lane,source}`` and ``laneway_source_health{lane,source}``.

    A source with no logged attempt has no health sample: its score is no evidence.
    """
    breaker = GaugeMetricFamily(
        "laneway_breaker_state",
        "Breaker state of a lane's source: 0 closed, 1 half-open, 2 open",
        labels=["lane", "source"],
    )
    health = GaugeMetricFamily(
        "laneway_source_health",
        "Health score (0 to 1) admission ranks a lane's source by; absent while untried",
        labels=["lane", "source"],
    )
    for row in rows:
        breaker.add_metric([row.lane, row.source], BREAKER_STATES[row.breaker])
        if row.health is not None:
            health.add_metric([row.lane, row.source], row.health)
    return [breaker, health]
