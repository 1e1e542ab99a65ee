"""The call figures' metric families: names, help texts, labels and histogram bounds.

``Metrics`` keeps the figures as plain dicts (label tuples to numbers) and
``CallCollector`` builds prometheus-client's families from them when
``/metrics`` is scraped, so nothing of prometheus-client runs on a call's path.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

WHERE = ("lane", "source")
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "laneway_requests": ("Finished calls.", (*WHERE, "outcome")),
    "laneway_errors": ("Failed calls by error code.", (*WHERE, "error")),
    "laneway_attempts": ("Attempts by outcome.", (*WHERE, "outcome")),
    "laneway_pushbacks": ("Attempts that ended in an honoured pushback.", WHERE),
    "laneway_hedges": (
        "Attempts of hedge races: hedge_won, hedge_lost, cancelled (a first attempt beaten).",
        ("lane", "outcome"),
    ),
    "laneway_tokens": ("Reported or estimated tokens.", (*WHERE, "kind", "usage_source")),
    "laneway_usage_unknown_calls": ("Calls whose usage is unknown.", WHERE),
    "laneway_cost_usd": ("USD of calls with a known cost.", (*WHERE, "basis")),
    "laneway_unpriced_calls": ("Calls with usage but no price.", WHERE),
    "laneway_responses": ("HTTP answers by status, calls and refusals alike.", ("status",)),
    "laneway_key_requests": ("Finished calls by key.", ("key", "outcome")),
    "laneway_key_tokens": ("Reported or estimated tokens by key.", ("key", "kind")),
    "laneway_key_cost_usd": ("USD of calls with a known cost, by key.", ("key",)),
}
KEY_TOKEN_KINDS = ("prompt", "completion")
HISTOGRAMS: dict[str, tuple[str, tuple[float, ...]]] = {
    "laneway_latency_seconds": (
        "Call latency.",
        (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0),
    ),
    "laneway_ttfb_seconds": (
        "Stream time to first token.",
        (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0),
    ),
}
TOKEN_KINDS = ("prompt", "completion", "reasoning", "cached", "cache_write")


@dataclass(slots=True)
class LaneHistogram:
    """Bucket counts (not cumulative) and the sum of one labelled histogram."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value


Counts = Mapping[tuple[str, tuple[str, ...]], float]
"""Counter figures: (family name, label values) to the count."""
Histograms = Mapping[tuple[str, str], LaneHistogram]
"""Histograms: (family name, lane) to its buckets."""


class CallCollector(Collector):
    """Builds the metric families from ``Metrics``' dicts (read by ``figures``) when scraped."""

    def __init__(self, figures: Callable[[], tuple[Counts, Histograms]]) -> None:
        self.figures = figures

    def collect(self) -> Iterable[Metric]:
        counts, lane_histograms = self.figures()
        families = {
            name: CounterMetricFamily(name, doc, labels=labels)
            for name, (doc, labels) in COUNTERS.items()
        }
        for (name, labels), value in list(counts.items()):
            families[name].add_metric(labels, value)
        yield from families.values()
        histograms = {
            name: HistogramMetricFamily(name, doc, labels=["lane"])
            for name, (doc, _) in HISTOGRAMS.items()
        }
        for (name, lane), h in list(lane_histograms.items()):
            histograms[name].add_metric([lane], cumulative(h), sum_value=h.total)
        yield from histograms.values()


def cumulative(histogram: LaneHistogram) -> list[tuple[str, float]]:
    bounds = [*map(floatToGoString, histogram.bounds), "+Inf"]
    running, out = 0, []
    for bound, count in zip(bounds, list(histogram.counts), strict=True):
        running += count
        out.append((bound, float(running)))
    return out
