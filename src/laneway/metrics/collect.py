"""``Metrics``: finished calls as Prometheus counters and histograms, and ``/metrics``.

The engine's record feed (``laneway.app.feed``) hands it the finished calls of
each turn of the event loop as one batch, after their answers went, and
``CallCounts`` adds them to plain dicts; the metric families are built from
those dicts when ``/metrics`` is scraped. Every read of a figure (a scrape, the
status page, a snapshot) first takes the records still waiting for their
batch (``follow``), so nothing read is behind. It runs on the event loop only;
scrapes read a snapshot of the dicts.

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
from laneway.metrics.counting import CallCounts
from laneway.metrics.families import CallCollector, LaneHistogram
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
    """A ``BatchObserver`` keeping Prometheus figures of every finished call."""

    def __init__(self, cost: CostFn | None = None, share: SharedFolder | None = None) -> None:
        self.share = share
        self.calls = CallCounts(cost)
        self._catch_up: Callable[[], None] = _up_to_date
        self.config = ConfigFigures()
        self.key_refusals: Mapping[tuple[str, str], int] | None = None
        self.state: StateReport | None = None
        self.key_ledger: KeyLedgerReport | None = None
        self.registry = CollectorRegistry()
        self.registry.register(CallCollector(lambda: (self.counts, self.histograms)))
        self.registry.register(ConfigCollector(self.config))

    def observe(self, record: CallRecord) -> None:
        """Count one finished call now (``observe_batch`` is how the engine's feed hands them)."""
        self.calls.add(record)

    def observe_batch(self, records: Sequence[CallRecord]) -> None:
        """Count the finished calls of one batch (off the request path)."""
        add = self.calls.add
        for record in records:
            add(record)

    def follow(self, catch_up: Callable[[], None]) -> None:
        """Call ``catch_up`` before any figure is read, so records still waiting count."""
        self._catch_up = catch_up

    @property
    def counts(self) -> dict[tuple[str, tuple[str, ...]], float]:
        """Every counter: (family, label values) to its value."""
        self._catch_up()
        return self.calls.counts

    @property
    def histograms(self) -> dict[tuple[str, str], LaneHistogram]:
        """Every histogram: (family, lane) to its buckets."""
        self._catch_up()
        return self.calls.histograms

    @property
    def history(self) -> History:
        """The last hour per lane and source, for the status page."""
        self._catch_up()
        return self.calls.history

    def responded(self, status: int) -> None:
        """Count one HTTP answer of ``status``."""
        self.calls.responded(status)

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


def render_metrics(metrics: Metrics, now: Sequence[Metric] = ()) -> tuple[bytes, str]:
    """The body and ``Content-Type`` of a ``GET /metrics`` answer."""
    return metrics.render(now)


def _up_to_date() -> None:
    """The catch-up of metrics no feed hands records to: nothing is ever waiting."""
