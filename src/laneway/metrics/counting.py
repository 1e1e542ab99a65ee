"""``CallCounts``: finished calls counted into plain dicts, and the status page's history.

``Metrics`` hands it each batch of records (``observe_batch``, off the request
path): every figure is a number in a dict keyed by (family, label values), and
the metric families are built from those dicts only when ``/metrics`` is
scraped. prometheus-client's own ``Counter.labels().inc()`` costs ~2.5 µs per
figure with its locks (measured), and a call updates about ten figures.

Only known token figures are counted; calls with unknown usage, or with usage
but no price, are counted apart, never as 0.
"""

from __future__ import annotations

from collections.abc import Callable

from laneway.core.records import CallRecord
from laneway.core.types import RACED
from laneway.metrics.families import HISTOGRAMS, KEY_TOKEN_KINDS, TOKEN_KINDS, LaneHistogram
from laneway.metrics.history import History

CostFn = Callable[[CallRecord], tuple[float | None, str]]


class CallCounts:
    """The counters, histograms and history of the calls one process finished."""

    def __init__(self, cost: CostFn | None = None) -> None:
        self.cost = cost
        self.counts: dict[tuple[str, tuple[str, ...]], float] = {}
        self.histograms: dict[tuple[str, str], LaneHistogram] = {}
        self.history = History()
        """The last hour per lane and source, for the status page."""
        self._statuses: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._key_labels: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {}

    def add(self, record: CallRecord) -> None:
        """Count one finished call.

        Every call passes here, so the usual figures are added in place rather
        than through ``_inc`` (a Python call each, about ten a call).
        """
        lane, source = record.lane, record.source or ""
        counts = self.counts
        figure: tuple[str, tuple[str, ...]] = ("laneway_requests", (lane, source, record.outcome))
        counts[figure] = counts.get(figure, 0.0) + 1.0
        if record.error is not None:
            self._inc("laneway_errors", (lane, source, record.error))
        for attempt in record.attempts:
            figure = ("laneway_attempts", (lane, attempt.source, attempt.outcome))
            counts[figure] = counts.get(figure, 0.0) + 1.0
            if attempt.pushback:
                self._inc("laneway_pushbacks", (lane, attempt.source))
            if attempt.outcome in RACED:
                self._inc("laneway_hedges", (lane, attempt.outcome))
        latency = self.histograms.get(("laneway_latency_seconds", lane))
        if latency is None:
            latency = self._histogram("laneway_latency_seconds", lane)
        latency.observe(record.latency)
        if record.ttfb is not None:
            self._observe("laneway_ttfb_seconds", lane, record.ttfb)
        usd = self._usage(record, lane, source)
        self.history.observe(record, usd)
        key = record.meta.caller
        if key is not None:
            self._key_figures(key, record, usd)

    def responded(self, status: int) -> None:
        """Count one HTTP answer of ``status``."""
        labels = self._statuses.get(status)
        if labels is None:
            labels = self._statuses[status] = ("laneway_responses", (str(status),))
        self.counts[labels] = self.counts.get(labels, 0.0) + 1.0

    def _key_figures(self, key: str, record: CallRecord, usd: float | None) -> None:
        """The key's calls, tokens and cost; label tuples are made once per key and figure."""
        self._add(self._key_label("laneway_key_requests", key, record.outcome))
        usage = record.usage
        for kind, count in zip(
            KEY_TOKEN_KINDS, (usage.prompt_tokens, usage.completion_tokens), strict=True
        ):
            if count is not None:
                self._add(self._key_label("laneway_key_tokens", key, kind), count)
        if usd is not None:
            self._add(self._key_label("laneway_key_cost_usd", key, ""), usd)

    def _key_label(self, name: str, key: str, extra: str) -> tuple[str, tuple[str, ...]]:
        found = self._key_labels.get((name, key, extra))
        if found is None:
            labels = (key, extra) if extra else (key,)
            found = self._key_labels[name, key, extra] = (name, labels)
        return found

    def _add(self, labels: tuple[str, tuple[str, ...]], amount: float = 1.0) -> None:
        self.counts[labels] = self.counts.get(labels, 0.0) + amount

    def _usage(self, record: CallRecord, lane: str, source: str) -> float | None:
        """Count the call's tokens and cost; return its USD when known."""
        usage = record.usage
        if not usage.known:
            if self.cost is not None and self.cost(record)[1] == "not_billed":
                return 0.0  # a failed call no upstream answered: known to cost nothing
            self._inc("laneway_usage_unknown_calls", (lane, source))
            return None
        figures = (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.reasoning_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens,
        )
        counts, usage_source = self.counts, usage.source
        for kind, count in zip(TOKEN_KINDS, figures, strict=True):
            if count is not None:
                key = ("laneway_tokens", (lane, source, kind, usage_source))
                counts[key] = counts.get(key, 0.0) + count
        if self.cost is None:
            return None
        usd, status = self.cost(record)
        if usd is not None:
            spent = ("laneway_cost_usd", (lane, source, status))
            counts[spent] = counts.get(spent, 0.0) + usd
        elif status == "unpriced":
            self._inc("laneway_unpriced_calls", (lane, source))
        return usd

    def _inc(self, name: str, labels: tuple[str, ...], amount: float = 1.0) -> None:
        key = (name, labels)
        self.counts[key] = self.counts.get(key, 0.0) + amount

    def _observe(self, name: str, lane: str, value: float) -> None:
        histogram = self.histograms.get((name, lane))
        if histogram is None:
            histogram = self._histogram(name, lane)
        histogram.observe(value)

    def _histogram(self, name: str, lane: str) -> LaneHistogram:
        """A new histogram ``name`` of ``lane``, kept."""
        histogram = self.histograms[name, lane] = LaneHistogram(HISTOGRAMS[name][1])
        return histogram
