"""The gateway's composition for ``laneway serve``: one process, successive configs.

Only here are the aiohttp transport, pricing, telemetry, metrics, the cache,
the state store, the ``Engine`` and the ``Gateway`` put together. What lives
as long as the process is made once (``Composer``): the transport (its
connection pools), the metrics (counters never restart), the telemetry
writer, the access log, tracing, and the pricer, which each config extends.
What a config decides is made per config (``Composer.generation``): the
engine and its lanes, keys and their limits, readiness. A reloaded config
keeps the state store, the cache and the key ledger when their URLs did not
change, and the states of its unchanged sources (``engine.carry``).

Paths in the config (the telemetry SQLite file, the cache) are relative to
the config file's folder.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from laneway.accounting.pricer import Pricer
from laneway.app.assembly import ObserverFactory, assemble, watch_shared_state
from laneway.app.carry import carry_states
from laneway.app.engine import build_engine, open_transport
from laneway.app.gateway import key_limits
from laneway.cache import CacheStore, GuardedCache
from laneway.config.models import LanewayConfig
from laneway.config.secrets import configured_secrets, secret_patterns
from laneway.core.clock import Clock
from laneway.core.records import CallObserver, RecordPricer
from laneway.core.redact import Redactor, redact_logs
from laneway.engine.gateway import Engine
from laneway.metrics import Metrics
from laneway.server import Gateway
from laneway.server.access_log import AccessLog, LogFormat
from laneway.server.context import CallsInFlight
from laneway.server.health import ConfigId
from laneway.server.limits import KeyLimits, stores_keys
from laneway.server.protocol import CONNECTIONS
from laneway.serving.generations import Closable, Generation
from laneway.state import MemoryStore, SourceStore
from laneway.state.keys.ledger import KeyLedger
from laneway.telemetry import TelemetryWriter

if TYPE_CHECKING:
    from laneway.server.admin import AdminApi
    from laneway.server.stored_keys import StoredKeys

log = logging.getLogger("laneway.serve")


@dataclass(frozen=True, slots=True)
class _Process:
    """What the first config's assembly made that serves every config of the process."""

    pricer: Pricer
    metrics: Metrics
    counting: bool
    """``server.metrics`` of the first config: whether the metrics count calls and are served."""
    writer: TelemetryWriter | None
    observers: list[CallObserver]
    engine_clock: Clock


@dataclass(frozen=True, slots=True)
class _Kept:
    """What the generation in service holds that a reloaded config may keep."""

    config: LanewayConfig
    store: SourceStore
    cache: CacheStore
    ledger: KeyLedger | None


class Composer:
    """Builds the gateway of each config one ``laneway serve`` process serves.

    ``base_dir`` is the config file's folder: relative telemetry and cache
    paths start there. The first config is assembled as the library's is
    (``laneway.app.assemble``): the pricer, the telemetry writer (``None``
    when ``telemetry.url`` is off; started and flushed by the gateway's
    lifespan), the metrics and the observers it makes serve every later
    config too. ``access_log`` writes one line per call to stderr in that
    format (``None``: no access log). Every log record and telemetry row of
    the process is redacted of every config's secrets (access-log fields are
    redacted as they enter: request ids at the edge, upstream text at the
    transport). ``share`` is the folder where workers pool their metrics
    (``None``: one process). Spans are exported when the ``laneway[otel]``
    extra is installed and the process's ``OTEL_*`` variables ask for traces.
    """

    def __init__(
        self,
        base_dir: Path,
        *,
        access_log: LogFormat | None = None,
        share: Path | None = None,
    ) -> None:
        self.base_dir = base_dir
        self.access_log = access_log
        self.share = share
        self.transport = open_transport()
        self._secrets: set[str] = set()
        self._patterns: set[str] = set()
        self.current: Generation | None = None
        self._kept: _Kept | None = None
        self._process: _Process | None = None
        self._calls = CallsInFlight()  # /healthz counts the calls of every config

    @property
    def metrics(self) -> Metrics:
        """The process's metrics (made with the first config)."""
        assert self._process is not None, "generation() comes first"
        return self._process.metrics

    def generation(
        self, config: LanewayConfig, environ: Mapping[str, str], config_id: ConfigId | None
    ) -> Generation:
        """The gateway of ``config``, keeping what the one in service shares with it.

        Once built it is the one in service for the next reload (the caller
        swaps it in). Raises ``ConfigError`` (or another error) without
        touching what the generation in service uses: it stays in service.
        """
        previous = self.current
        engine, process = self._engine(config, environ)
        limits = self._limits(config, environ, engine, process.pricer)
        stored = self._stored_keys(config, engine)
        admin = None if stored is None else self._admin(config, environ, stored)
        gateway = Gateway(
            config,
            engine,
            environ,
            metrics=process.metrics if process.counting else None,
            telemetry=process.writer,
            limits=limits,
            config_id=config_id,
            calls=self._calls,
            stored=stored,
            admin=admin,
        )
        if stored is not None and previous is not None:  # a reload, in the server's loop
            stored.start()
        store, cache = engine.loop.admission.store, _raw_cache(engine)
        held = [*(() if limits is None else limits.closables), stored, admin]
        uses: list[Closable] = [self.transport, store, cache, *(u for u in held if u is not None)]
        self._process = process
        self.current = Generation(gateway, uses)
        self._kept = _Kept(config, store, cache, None if limits is None else limits.ledger)
        _watch(process.metrics, config, config_id, store)
        return self.current

    def _engine(self, config: LanewayConfig, environ: Mapping[str, str]) -> tuple[Engine, _Process]:
        """The engine of ``config``: the first assembled, a reload's over what the process and
        the generation in service keep (their source states carried, prices extended)."""
        kept, previous = self._kept, self.current
        redactor = self._redactor(config, environ)
        if self._process is None:
            return self._first(config, environ)
        process = self._process
        engine = build_engine(
            config,
            environ,
            base_dir=self.base_dir,
            transport=self.transport,
            cache=kept.cache if kept and config.cache == kept.config.cache else None,
            clock=process.engine_clock,
            observers=process.observers,
            price=process.pricer.cost,
            redactor=redactor,
            source_store=self._shared_store(config, kept),
        )
        if previous is not None:
            self._carry(previous.gateway, engine)
            if process.writer is not None:
                process.writer.redactor = redactor
            process.pricer.update(config.lanes)
        return engine, process

    def _limits(
        self, config: LanewayConfig, environ: Mapping[str, str], engine: Engine, pricer: Pricer
    ) -> KeyLimits | None:
        """The keys' limits over the ledger in service (``_ledger``), their refusal counters
        going on across reloads, their budget alerts sent as ``server.alerts`` says."""
        ledger = self._ledger(config)
        limits = key_limits(config, engine.clock, pricer=pricer, ledger=ledger, environ=environ)
        previous = None if self.current is None else self.current.gateway.limits
        if limits is not None and previous is not None:
            limits.refusals = previous.refusals
        return limits

    def _first(self, config: LanewayConfig, environ: Mapping[str, str]) -> tuple[Engine, _Process]:
        """The first config's engine, and what the process keeps from its assembly."""
        built = assemble(
            config,
            environ,
            self.base_dir,
            transport=self.transport,
            access_log=None if self.access_log is None else _access_log(self.access_log),
            share=self.share,
            tracing=True,
            count_calls=config.server.metrics,
        )
        built.metrics.watch_connections(CONNECTIONS)
        engine = built.engine
        process = _Process(
            built.pricer,
            built.metrics,
            config.server.metrics,
            built.telemetry,
            engine.recorder.observers,
            engine.clock,
        )
        return engine, process

    def _carry(self, old: Gateway, engine: Engine) -> None:
        old_store = old.engine.loop.admission.store
        carried = carry_states(
            old.engine.lanes, engine.lanes, old_store, engine.loop.admission.store
        )
        if carried.kept:
            log.info("reload: state kept for %s", ", ".join(carried.kept))
        if carried.fresh:
            log.info("reload: fresh state for %s (new or changed)", ", ".join(carried.fresh))

    def _redactor(self, config: LanewayConfig, environ: Mapping[str, str]) -> Redactor:
        """The redactor of every secret any config of this process held (calls of an old
        config may still be running, and their rows still queued)."""
        self._secrets.update(configured_secrets(config, environ))
        self._patterns.update(secret_patterns(config))
        redactor = Redactor(self._secrets, sorted(self._patterns))
        redact_logs(redactor)
        return redactor

    def _shared_store(self, config: LanewayConfig, kept: _Kept | None) -> SourceStore | None:
        """Shared state (Redis) is kept while ``state:`` is unchanged; local state is made
        anew (``None``), and ``carry_states`` moves the unchanged sources' states into it."""
        if kept is None or config.state != kept.config.state:
            return None
        return None if isinstance(kept.store, MemoryStore) else kept.store

    def _stored_keys(self, config: LanewayConfig, engine: Engine) -> StoredKeys | None:
        """The key store's keys for this config's lanes (``None`` without a key store)."""
        if not stores_keys(config):
            return None
        from laneway.server.stored_keys import StoredKeys
        from laneway.state.keys.databases import DEFAULT_PATH, open_key_store

        server, state = config.server, config.state
        store = open_key_store(server.key_store or DEFAULT_PATH, self.base_dir)
        notices = None
        if state.url is not None:  # Redis: changes are announced there too
            from laneway.state.keys.notices import RedisKeyNotices

            notices = RedisKeyNotices.from_url(state.url, timeout=state.timeout)
        lanes = list(engine.lanes)
        return StoredKeys(store, lanes, config.aliases, server.key_store_poll, notices)

    def _admin(
        self, config: LanewayConfig, environ: Mapping[str, str], stored: StoredKeys
    ) -> AdminApi | None:
        """The admin API (``None`` without ``server.admin_keys``)."""
        if not config.server.admin_keys:
            return None
        from laneway.server.admin import admin_api
        from laneway.server.admin_log import AdminAccessLog
        from laneway.telemetry.factory import store_for_url

        telemetry = store_for_url(config.telemetry.url, self.base_dir)
        names = [key.name for key in config.server.keys]
        access = None if self.access_log is None else AdminAccessLog(sys.stderr, self.access_log)
        return admin_api(config.server.admin_keys, environ, stored, names, telemetry, access)

    def _ledger(self, config: LanewayConfig) -> KeyLedger | None:
        """The key ledger in service while ``state:`` is unchanged, so every remaining key's
        windows, slots and spend go on (a raised budget does not forget today's spend);
        ``None`` lets ``key_limits`` open the one ``state.url`` names."""
        kept = self._kept
        if kept is not None and kept.ledger is not None and config.state == kept.config.state:
            return kept.ledger
        return None


def build_gateway(
    config: LanewayConfig,
    environ: Mapping[str, str],
    base_dir: Path,
    *,
    access_log: LogFormat | None = None,
    share: Path | None = None,
) -> Gateway:
    """The gateway of ``config`` alone, with no reloads (see ``Composer`` for the arguments)."""
    composer = Composer(base_dir, access_log=access_log, share=share)
    return composer.generation(config, environ, None).gateway


def _access_log(log_format: LogFormat) -> ObserverFactory:
    """The access log to stderr in ``log_format``, pricing with the assembly's pricer."""

    def make(price: RecordPricer) -> AccessLog:
        return AccessLog(price, sys.stderr, log_format)

    return make


def _raw_cache(engine: Engine) -> CacheStore:
    """The cache store under the engine's guard (kept by a reload that keeps ``cache.url``)."""
    cache = engine.cache
    return cache.store if isinstance(cache, GuardedCache) else cache


def _watch(
    metrics: Metrics, config: LanewayConfig, config_id: ConfigId | None, store: SourceStore
) -> None:
    """Tell the metrics which config serves, and of a shared state store's health."""
    if config_id is not None:
        metrics.config.generation = config_id.generation
        metrics.config.hash = config_id.hash
    watch_shared_state(metrics, config, store)
