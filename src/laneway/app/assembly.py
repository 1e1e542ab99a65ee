"""``assemble``: one configuration in, the whole product out, for the library and the server.

``Laneway.from_config`` and ``laneway serve`` both call this, so a library
call and a gateway call are recorded, measured and priced by the same
objects: the ``Pricer`` (prices found once, at start), the telemetry writer
``telemetry:`` asks for, the ``Metrics`` every call feeds, and the engine
(``build_engine``) whose recorder hands each finished call to them: once, to
one ``RecordFeed``, which gives the calls of each turn of the event loop to
every one of them together, off the request path. An observer that is off
(metrics under ``server.metrics: false``, the access log, telemetry, traces)
is not in the feed, so it costs a call nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from laneway.accounting.pricer import Pricer
from laneway.app.engine import build_engine
from laneway.app.feed import RecordFeed
from laneway.app.pricing import pricer_for
from laneway.cache import CacheStore
from laneway.config.models import LanewayConfig
from laneway.config.secrets import redactor_for
from laneway.core.clock import Clock
from laneway.core.records import BatchObserver, CallObserver, RecordPricer
from laneway.core.redact import Redactor
from laneway.core.transport import Transport
from laneway.engine.gateway import Engine
from laneway.metrics import Metrics, SharedFolder
from laneway.state import SourceStore
from laneway.telemetry import TelemetryWriter, writer_for
from laneway.tracing.setup import observer_from_env

ObserverFactory = Callable[[RecordPricer], CallObserver]
"""Makes an observer that prices calls (the server's access log) from the assembly's pricer."""


@dataclass(slots=True)
class Assembly:
    """What ``assemble`` made: the engine and the objects its calls are recorded by.

    ``telemetry`` is ``None`` when telemetry is off; whoever runs the engine
    starts it (``TelemetryWriter.start``) and flushes it (``aclose``).
    """

    engine: Engine
    pricer: Pricer
    metrics: Metrics
    telemetry: TelemetryWriter | None
    redactor: Redactor


def assemble(
    config: LanewayConfig,
    environ: Mapping[str, str],
    base_dir: Path | None,
    *,
    transport: Transport | None = None,
    cache: CacheStore | None = None,
    clock: Clock | None = None,
    observers: Sequence[CallObserver] = (),
    access_log: ObserverFactory | None = None,
    share: Path | None = None,
    tracing: bool = False,
    count_calls: bool = True,
) -> Assembly:
    """The engine of ``config`` with pricing, telemetry and metrics wired in.

    ``base_dir`` is the config file's folder (relative telemetry and cache
    paths start there; ``None`` when the config came from no file, see
    ``telemetry_dir``). ``observers`` receive every finished call after the
    metrics, the access log and the telemetry writer; ``share`` is the folder
    where ``--workers`` pool their metrics; ``tracing`` adds the span
    observer the process's ``OTEL_*`` variables ask for. ``count_calls``
    false leaves the metrics out of the feed (``server.metrics: false``):
    they are made, for the process's own figures, but count no call.
    """
    redactor = redactor_for(config, environ)
    pricer = pricer_for(config)
    folder = telemetry_dir(config, base_dir)
    writer = None if folder is None else writer_for(config.telemetry, folder, pricer.cost, redactor)
    metrics = Metrics(pricer.cost, None if share is None else SharedFolder(share))
    if writer is not None:
        metrics.watch_queue(writer)
    watchers = _watchers(metrics if count_calls else None, writer, pricer, access_log, tracing)
    engine = build_engine(
        config,
        environ,
        base_dir=base_dir,
        transport=transport,
        cache=cache,
        clock=clock,
        observers=[RecordFeed(watchers), *observers] if watchers else observers,
        price=pricer.cost,
        redactor=redactor,
    )
    watch_shared_state(metrics, config, engine.loop.admission.store)
    return Assembly(engine, pricer, metrics, writer, redactor)


def _watchers(
    metrics: Metrics | None,
    writer: TelemetryWriter | None,
    pricer: Pricer,
    access_log: ObserverFactory | None,
    tracing: bool,
) -> list[BatchObserver | CallObserver]:
    """What the record feed hands each call to, in order: the metrics (unless calls are not
    counted), the access log, the telemetry writer, and the spans ``OTEL_*`` asks for."""
    watchers: list[BatchObserver | CallObserver] = [] if metrics is None else [metrics]
    if access_log is not None:
        watchers.append(access_log(pricer.cost))
    if writer is not None:
        watchers.append(writer)
    spans = observer_from_env(os.environ) if tracing else None
    if spans is not None:
        watchers.append(spans)
    return watchers


def watch_shared_state(metrics: Metrics, config: LanewayConfig, store: SourceStore) -> None:
    """Report a shared (Redis) state store's health on ``/metrics``; the Redis adapter is
    imported only when ``state.url`` names one."""
    if config.state.url is not None:
        from laneway.state import FallbackStore

        if isinstance(store, FallbackStore):
            metrics.watch_state(store)


def telemetry_dir(config: LanewayConfig, base_dir: Path | None) -> Path | None:
    """Where relative telemetry paths start; ``None`` when no row is to be written.

    A config file's folder when there is one. A config built in code
    (``Laneway.from_settings``) records only when it declares ``telemetry:``
    itself, relative paths then starting at the working directory: the
    default ``laneway.sqlite3`` is "beside the config", and there is none.
    """
    if base_dir is not None:
        return base_dir
    return Path.cwd() if "telemetry" in config.model_fields_set else None


def snapshot_metrics(share: Path, pid: int) -> Metrics:
    """Metrics that no call passes through, shared as snapshots in ``share`` under ``pid``:
    the ``--workers`` supervisor's count of reloads, which every worker's scrape adds."""
    return Metrics(share=SharedFolder(share, pid=pid))
