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
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from laneway.core.records import CallRecord
from laneway.core.types import RACED
from laneway.metrics.history import History
from laneway.metrics.share import SharedFolder, registry_of

log = logging.getLogger("laneway.metrics")

CostFn = Callable[[CallRecord], tuple[float | None, str]]
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


class ConnectionReport(Protocol):
    """The server's connection figures (``server.protocol.ConnectionStats`` has this shape)."""

    @property
    def opened(self) -> int: ...
    @property
    def refused(self) -> int: ...
    @property
    def open_now(self) -> int: ...
    @property
    def closed(self) -> dict[str, int]: ...


class QueueReport(Protocol):
    """The telemetry writer's counters (``telemetry.TelemetryWriter`` has this shape)."""

    @property
    def depth(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def written(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def spooled(self) -> int: ...


class StateReport(Protocol):
    """Shared state's health (``state.FallbackStore`` has this shape)."""

    @property
    def degraded(self) -> bool: ...
    @property
    def outages(self) -> int: ...
    @property
    def local_grants(self) -> int: ...
    @property
    def replicas(self) -> int | None: ...


@runtime_checkable
class KeyLedgerReport(StateReport, Protocol):
    """Key limits' shared state (``state.key_fallback.FallbackKeyLedger`` has this shape)."""

    @property
    def replayed(self) -> int: ...


@dataclass(slots=True)
class ConfigFigures:
    """The configuration this process serves (``generation`` 0: not told) and its reloads.

    ``generation`` counts the configs served since start (1 at start, one more
    per reload applied); ``hash`` names the config file's content.
    """

    generation: int = 0
    hash: str = ""
    reloads: dict[str, int] = field(default_factory=dict)
    """Reloads by outcome (``applied``, ``refused``), where this process decides them."""

    def reloaded(self, outcome: str) -> None:
        """Count one reload that ended in ``outcome``."""
        self.reloads[outcome] = self.reloads.get(outcome, 0) + 1


@dataclass(slots=True)
class _Histogram:
    """Bucket counts (not cumulative) and the sum of one labelled histogram."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value


class Metrics:
    """A ``CallObserver`` keeping Prometheus figures of every finished call."""

    def __init__(self, cost: CostFn | None = None, share: SharedFolder | None = None) -> None:
        self.cost = cost
        self.share = share
        self.counts: dict[tuple[str, tuple[str, ...]], float] = {}
        self.histograms: dict[tuple[str, str], _Histogram] = {}
        self._statuses: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._key_labels: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {}
        self.history = History()
        """The last hour per lane and source, for the status page."""
        self.config = ConfigFigures()
        self.key_refusals: Mapping[tuple[str, str], int] | None = None
        self.state: StateReport | None = None
        self.key_ledger: KeyLedgerReport | None = None
        self.registry = CollectorRegistry()
        self.registry.register(_CallCollector(self))
        self.registry.register(_ConfigCollector(self.config))

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
        self.registry.register(_ConnectionCollector(report))

    def watch_key_refusals(self, refusals: Mapping[tuple[str, str], int]) -> None:
        """Report calls refused by key limits, by (key, limit), read from ``refusals`` at scrape.

        A later call (a reloaded config's limits) reads the new mapping instead.
        """
        if self.key_refusals is None:
            self.registry.register(_KeyRefusalCollector(self))
        self.key_refusals = refusals

    def watch_queue(self, queue: QueueReport) -> None:
        """Report the telemetry queue's depth, drops, writes and failures at each scrape."""
        self.registry.register(_QueueCollector(queue))

    def watch_state(self, state: StateReport) -> None:
        """Report whether shared state (Redis) answers, and its outages, at each scrape.

        A later call (a reload that opened another store) reports that one instead.
        """
        if self.state is None:
            self.registry.register(_StateCollector(lambda: self.state, _STATE_FAMILIES))
        self.state = state

    def watch_key_ledger(self, ledger: KeyLedgerReport) -> None:
        """Report whether key limits reach Redis, their outages and replays, at each scrape.

        A later call (a reload that opened another ledger) reports that one instead.
        """
        if self.key_ledger is None:
            self.registry.register(_KeyLedgerCollector(self))
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

    def _histogram(self, name: str, lane: str) -> _Histogram:
        """A new histogram ``name`` of ``lane``, kept."""
        histogram = self.histograms[name, lane] = _Histogram(HISTOGRAMS[name][1])
        return histogram


def render_metrics(metrics: Metrics, now: Sequence[Metric] = ()) -> tuple[bytes, str]:
    """The body and ``Content-Type`` of a ``GET /metrics`` answer."""
    return metrics.render(now)


class _CallCollector(Collector):
    """Builds the metric families from ``Metrics``' dicts at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        families = {
            name: CounterMetricFamily(name, doc, labels=labels)
            for name, (doc, labels) in COUNTERS.items()
        }
        for (name, labels), value in list(self.metrics.counts.items()):
            families[name].add_metric(labels, value)
        yield from families.values()
        histograms = {
            name: HistogramMetricFamily(name, doc, labels=["lane"])
            for name, (doc, _) in HISTOGRAMS.items()
        }
        for (name, lane), h in list(self.metrics.histograms.items()):
            histograms[name].add_metric([lane], _cumulative(h), sum_value=h.total)
        yield from histograms.values()


def _cumulative(histogram: _Histogram) -> list[tuple[str, float]]:
    bounds = [*map(floatToGoString, histogram.bounds), "+Inf"]
    running, out = 0, []
    for bound, count in zip(bounds, list(histogram.counts), strict=True):
        running += count
        out.append((bound, float(running)))
    return out


class _KeyRefusalCollector(Collector):
    """Calls refused by key limits, read from the limits' own dict when scraped."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(
            "laneway_key_refusals",
            "Calls refused by a key's limits before any upstream request, by limit.",
            labels=["key", "limit"],
        )
        for (key, limit), count in sorted((self.metrics.key_refusals or {}).items()):
            family.add_metric([key, limit], count)
        yield family


class _QueueCollector(Collector):
    """Reads the writer's counters when scraped, so the writer never touches Prometheus."""

    def __init__(self, queue: QueueReport) -> None:
        self.queue = queue

    def collect(self) -> Iterable[Metric]:
        q = self.queue
        yield GaugeMetricFamily("laneway_telemetry_queue_depth", "Records waiting.", value=q.depth)
        yield CounterMetricFamily("laneway_telemetry_dropped", "Records dropped.", value=q.dropped)
        yield CounterMetricFamily("laneway_telemetry_written", "Records written.", value=q.written)
        yield CounterMetricFamily(
            "laneway_telemetry_failed", "Records lost to failed writes.", value=q.failed
        )
        yield GaugeMetricFamily(
            "laneway_telemetry_spooled",
            "Records kept in the spool file until the database takes them.",
            value=q.spooled,
        )


class _ConnectionCollector(Collector):
    """Reads the server's connection figures when scraped."""

    def __init__(self, report: ConnectionReport) -> None:
        self.report = report

    def collect(self) -> Iterable[Metric]:
        r = self.report
        yield GaugeMetricFamily(
            "laneway_connections_open", "Client connections open now.", value=r.open_now
        )
        yield CounterMetricFamily(
            "laneway_connections_opened", "Client connections accepted.", value=r.opened
        )
        yield CounterMetricFamily(
            "laneway_connections_refused",
            "Connections answered 503 at once: server.max_connections, all busy.",
            value=r.refused,
        )
        closed = CounterMetricFamily(
            "laneway_connections_closed",
            "Connections the gateway closed, by reason (timeouts, head too large, evicted).",
            labels=["reason"],
        )
        for reason, count in sorted(r.closed.items()):
            closed.add_metric([reason], count)
        yield closed


@dataclass(frozen=True, slots=True)
class _OutageFamilies:
    """The names and help texts of one fallback adapter's outage metrics."""

    prefix: str
    up: str
    outages: str
    local: tuple[str, str]
    replicas: str


_STATE_FAMILIES = _OutageFamilies(
    "laneway_state",
    "1 while shared state (Redis) answers, 0 while quotas run on local shares.",
    "Times shared state became unreachable.",
    ("local_admissions", "Admissions granted on local state during outages."),
    "Replicas last seen in shared state.",
)
_KEY_LEDGER_FAMILIES = _OutageFamilies(
    "laneway_key_ledger",
    "1 while key limits are counted in Redis, 0 while each key runs on local shares.",
    "Times key limits lost Redis.",
    ("local_grants", "Keyed calls granted on local shares during outages."),
    "Replicas last seen serving keys in Redis.",
)


class _StateCollector(Collector):
    """Reads a fallback adapter's health (source quotas', or key limits') when scraped.

    ``report`` gives the adapter in service (a reload may open another), or ``None``.
    """

    def __init__(self, report: Callable[[], StateReport | None], families: _OutageFamilies) -> None:
        self.report = report
        self.families = families

    def collect(self) -> Iterable[Metric]:
        s, f = self.report(), self.families
        if s is None:
            return
        yield GaugeMetricFamily(f"{f.prefix}_backend_up", f.up, value=0 if s.degraded else 1)
        yield CounterMetricFamily(f"{f.prefix}_outages", f.outages, value=s.outages)
        local, text = f.local
        yield CounterMetricFamily(f"{f.prefix}_{local}", text, value=s.local_grants)
        if s.replicas is not None:
            yield GaugeMetricFamily(f"{f.prefix}_replicas", f.replicas, value=s.replicas)


class _ConfigCollector(Collector):
    """The served config's generation and hash, and the reloads, when scraped."""

    def __init__(self, figures: ConfigFigures) -> None:
        self.figures = figures

    def collect(self) -> Iterable[Metric]:
        f = self.figures
        if f.generation:
            yield GaugeMetricFamily(
                "laneway_config_generation",
                "Configs served since start (1 at start, +1 per reload); across workers, "
                "the lowest, so it moves when every worker serves the new config.",
                value=f.generation,
            )
            info = GaugeMetricFamily(
                "laneway_config_info",
                "Workers serving the config of this hash (sha256 of the file, 12 digits).",
                labels=["hash"],
            )
            info.add_metric([f.hash], 1)
            yield info
        if f.reloads:
            reloads = CounterMetricFamily(
                "laneway_config_reloads",
                "Reloads (SIGHUP, laneway reload) by outcome: applied, or refused with "
                "the old config still serving.",
                labels=["outcome"],
            )
            for outcome, count in sorted(f.reloads.items()):
                reloads.add_metric([outcome], count)
            yield reloads


class _KeyLedgerCollector(_StateCollector):
    """Key limits' outage metrics, and the calls replayed into Redis after outages."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(lambda: metrics.key_ledger, _KEY_LEDGER_FAMILIES)
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        ledger = self.metrics.key_ledger
        if ledger is None:
            return
        yield from super().collect()
        yield CounterMetricFamily(
            "laneway_key_ledger_replayed",
            "Keyed calls granted during outages and replayed into Redis after them.",
            value=ledger.replayed,
        )
