"""``Metrics``: finished calls as Prometheus counters and histograms.

``observe`` is on the request path, so it only adds to plain dicts (label
tuples to numbers) and prices the call with ``accounting``'s arithmetic; the
metric families are built from those dicts when ``/metrics`` is scraped.
prometheus-client's own ``Counter.labels().inc()`` costs ~2.5 µs per figure
with its locks (measured), and a call updates about ten figures. ``observe``
runs on the event loop only; scrapes read a snapshot of the dicts.

Only known token figures are counted; calls with unknown usage, or with usage
but no price, are counted apart, never as 0.

Given a ``SharedFolder`` (``laneway serve --workers N``), ``share_snapshots``
writes this worker's figures there every interval and ``render`` adds the other
workers' snapshots, so a scrape reports the whole server (see ``share``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from laneway.core.records import CallRecord
from laneway.core.types import RACED
from laneway.metrics.families import (
    HISTOGRAMS,
    KEY_TOKEN_KINDS,
    TOKEN_KINDS,
    CallCollector,
    LaneHistogram,
)
from laneway.metrics.history import History
from laneway.metrics.share import SharedFolder, registry_of
from laneway.metrics.watched import (
    STATE_FAMILIES,
    ConfigCollector,
    ConfigFigures,
    ConnectionCollector,
    ConnectionReport,
    KeyLedgerCollector,
    KeyLedgerReport,
    KeyRefusalCollector,
    QueueCollector,
    QueueReport,
    StateCollector,
    StateReport,
)

log = logging.getLogger("laneway.metrics")

CostFn = Callable[[CallRecord], tuple[float | None, str]]


class Metrics:
    """A ``CallObserver`` keeping Prometheus figures of every finished call."""

    def __init__(self, cost: CostFn | None = None, share: SharedFolder | None = None) -> None:
        self.cost = cost
        self.share = share
        self.counts: dict[tuple[str, tuple[str, ...]], float] = {}
        self.histograms: dict[tuple[str, str], LaneHistogram] = {}
        self._statuses: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._key_labels: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {}
        self.history = History()
        """The last hour per lane and source, for the status page."""
        self.config = ConfigFigures()
        self.key_refusals: Mapping[tuple[str, str], int] | None = None
        self.state: StateReport | None = None
        self.key_ledger: KeyLedgerReport | None = None
        self.registry = CollectorRegistry()
        self.registry.register(CallCollector(lambda: (self.counts, self.histograms)))
        self.registry.register(ConfigCollector(self.config))

    def observe(self, record: CallRecord) -> None:
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

    def watch_connections(self, report: ConnectionReport) -> None:
        """Report the server's open, refused and closed connections at each scrape."""
        self.registry.register(ConnectionCollector(report))

    def watch_key_refusals(self, refusals: Mapping[tuple[str, str], int]) -> None:
        """Report calls refused by key limits, by (key, limit), read from ``refusals`` at scrape.

        A later call (a reloaded config's limits) reads the new mapping instead.
        """
        if self.key_refusals is None:
            self.registry.register(KeyRefusalCollector(lambda: self.key_refusals))
        self.key_refusals = refusals

    def watch_queue(self, queue: QueueReport) -> None:
        """Report the telemetry queue's depth, drops, writes and failures at each scrape."""
        self.registry.register(QueueCollector(queue))

    def watch_state(self, state: StateReport) -> None:
        """Report whether shared state (Redis) answers, and its outages, at each scrape.

        A later call (a reload that opened another store) reports that one instead.
        """
        if self.state is None:
            self.registry.register(StateCollector(lambda: self.state, STATE_FAMILIES))
        self.state = state

    def watch_key_ledger(self, ledger: KeyLedgerReport) -> None:
        """Report whether key limits reach Redis, their outages and replays, at each scrape.

        A later call (a reload that opened another ledger) reports that one instead.
        """
        if self.key_ledger is None:
            self.registry.register(KeyLedgerCollector(lambda: self.key_ledger))
        self.key_ledger = ledger

    def render(self, now: Sequence[Metric] = ()) -> tuple[bytes, str]:
        """The exposition text and its content type (every worker's, when shared).

        ``now``: families read at this scrape (source standings), added as they are.
        """
        if self.share is None:
            if not now:
                return generate_latest(self.registry), CONTENT_TYPE_LATEST
            return generate_latest(
                registry_of([*self.registry.collect(), *now])
            ), CONTENT_TYPE_LATEST
        merged = self.share.merged(self.registry.collect())
        return generate_latest(registry_of([*merged, *now])), CONTENT_TYPE_LATEST

    def write_snapshot(self) -> None:
        """Write this worker's figures and history to the shared folder (when shared)."""
        if self.share is not None:
            self.share.write(self.registry.collect(), history=self.history.dump())

    def server_history(self) -> History:
        """The last hour of every worker when shared (see ``share``), else this process's."""
        if self.share is None:
            return self.history
        return self.history.merged(self.share.histories())

    async def share_snapshots(self, interval: float) -> None:
        """Write a snapshot every ``interval`` seconds until cancelled.

        Stops with a warning if the folder cannot be written (the supervisor
        removed it, the disk is full): the scrapes of this worker still work.
        """
        while True:
            await asyncio.sleep(interval)
            try:
                self.write_snapshot()
            except OSError as exc:
                log.warning("metrics snapshots stopped, other workers' scrapes miss ours: %s", exc)
                return

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


def render_metrics(metrics: Metrics, now: Sequence[Metric] = ()) -> tuple[bytes, str]:
    """The body and ``Content-Type`` of a ``GET /metrics`` answer."""
    return metrics.render(now)
