"""Figures other parts of the server keep, read when ``/metrics`` is scraped.

The connection counts, the telemetry queue, shared state's and key limits'
health, key refusals and the served config are kept by their owners (in the
shapes below) and read here at scrape time, so none of them touches
prometheus-client or pays anything per call for being reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


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
    """Key limits' shared state (``state.keys.fallback.FallbackKeyLedger`` has this shape)."""

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


class KeyRefusalCollector(Collector):
    """Calls refused by key limits, read from the limits' own dict when scraped.

    ``refusals`` gives the mapping in service (a reload's limits bring another).
    """

    def __init__(self, refusals: Callable[[], Mapping[tuple[str, str], int] | None]) -> None:
        self.refusals = refusals

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(
            "laneway_key_refusals",
            "Calls refused by a key's limits before any upstream request, by limit.",
            labels=["key", "limit"],
        )
        for (key, limit), count in sorted((self.refusals() or {}).items()):
            family.add_metric([key, limit], count)
        yield family


class QueueCollector(Collector):
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


class ConnectionCollector(Collector):
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
class OutageFamilies:
    """The names and help texts of one fallback adapter's outage metrics."""

    prefix: str
    up: str
    outages: str
    local: tuple[str, str]
    replicas: str


STATE_FAMILIES = OutageFamilies(
    "laneway_state",
    "1 while shared state (Redis) answers, 0 while quotas run on local shares.",
    "Times shared state became unreachable.",
    ("local_admissions", "Admissions granted on local state during outages."),
    "Replicas last seen in shared state.",
)
KEY_LEDGER_FAMILIES = OutageFamilies(
    "laneway_key_ledger",
    "1 while key limits are counted in Redis, 0 while each key runs on local shares.",
    "Times key limits lost Redis.",
    ("local_grants", "Keyed calls granted on local shares during outages."),
    "Replicas last seen serving keys in Redis.",
)


class StateCollector(Collector):
    """Reads a fallback adapter's health (source quotas', or key limits') when scraped.

    ``report`` gives the adapter in service (a reload may open another), or ``None``.
    """

    def __init__(self, report: Callable[[], StateReport | None], families: OutageFamilies) -> None:
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


class ConfigCollector(Collector):
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


class KeyLedgerCollector(StateCollector):
    """Key limits' outage metrics, and the calls replayed into Redis after outages.

    ``ledger`` gives the ledger in service (a reload may open another), or ``None``.
    """

    def __init__(self, ledger: Callable[[], KeyLedgerReport | None]) -> None:
        super().__init__(ledger, KEY_LEDGER_FAMILIES)
        self.ledger = ledger

    def collect(self) -> Iterable[Metric]:
        ledger = self.ledger()
        if ledger is None:
            return
        yield from super().collect()
        yield CounterMetricFamily(
            "laneway_key_ledger_replayed",
            "Keyed calls granted during outages and replayed into Redis after them.",
            value=ledger.replayed,
        )
