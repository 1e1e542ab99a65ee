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
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from laneway.accounting.pricer import Pricer
from laneway.cache import CacheStore, open_cache
from laneway.config.models import LanewayConfig
from laneway.config.secrets import configured_secrets
from laneway.core.clock import SystemClock
from laneway.core.records import CallObserver
from laneway.core.redact import Redactor, redact_logs
from laneway.engine.carry import carry_states
from laneway.engine.gateway import Engine
from laneway.http.aiohttp import AiohttpTransport
from laneway.metrics import Metrics, SharedFolder
from laneway.server import Gateway
from laneway.server.access_log import AccessLog, LogFormat
from laneway.server.health import ConfigId
from laneway.server.limits import key_limits
from laneway.server.protocol import CONNECTIONS
from laneway.server.reload import Closable, Generation
from laneway.state import MemoryStore, SourceStore, open_store
from laneway.state.keys import KeyLedger, open_key_ledger
from laneway.telemetry import writer_for
from laneway.tracing.setup import observer_from_env

log = logging.getLogger("laneway.serve")


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
    paths start there. The telemetry writer (``None`` when ``telemetry.url``
    is off) is started and flushed by the gateway's lifespan. ``access_log``
    writes one line per call to stderr in that format (``None``: no access log).
    Every log record and telemetry row of the process is redacted of every
    config's secrets from here on (access-log fields are redacted as they
    enter: request ids at the edge, upstream text at the transport).
    ``share`` is the folder where workers pool their metrics (``None``: one
    process). Spans are exported when the ``laneway[otel]`` extra is installed
    and the process's ``OTEL_*`` variables ask for traces (read by the SDK itself).
    """

    def __init__(
        self,
        config: LanewayConfig,
        environ: Mapping[str, str],
        base_dir: Path,
        *,
        access_log: LogFormat | None = None,
        share: Path | None = None,
    ) -> None:
        self.base_dir = base_dir
        self.clock = SystemClock()
        self._secrets: set[str] = set()
        self.pricer = Pricer.for_lanes(config.lanes)
        redactor = self._redactor(config, environ)
        self.writer = writer_for(config.telemetry, base_dir, self.pricer.cost, redactor)
        self.metrics = Metrics(self.pricer.cost, None if share is None else SharedFolder(share))
        self.metrics.watch_connections(CONNECTIONS)
        self.observers: list[CallObserver] = [self.metrics]
        if access_log is not None:
            self.observers.append(AccessLog(self.pricer.cost, sys.stderr, access_log))
        if self.writer is not None:
            self.metrics.watch_queue(self.writer)
            self.observers.append(self.writer)
        tracing = observer_from_env(os.environ)
        if tracing is not None:
            self.observers.append(tracing)
        self.transport = AiohttpTransport()
        self.current: Generation | None = None
        self._kept: _Kept | None = None

    def generation(
        self, config: LanewayConfig, environ: Mapping[str, str], config_id: ConfigId | None
    ) -> Generation:
        """The gateway of ``config``, keeping what the one in service shares with it.

        Once built it is the one in service for the next reload (the caller
        swaps it in). Raises ``ConfigError`` (or another error) without
        touching what the generation in service uses: it stays in service.
        """
        kept, previous = self._kept, self.current
        store = self._store(config, kept)
        cache = kept.cache if kept is not None and config.cache == kept.config.cache else None
        cache = cache or open_cache(config.cache.url, self.base_dir)
        engine = Engine(
            config,
            environ,
            self.transport,
            clock=self.clock,
            observers=self.observers,
            cache=cache,
            store=store,
        )
        if previous is not None:
            self._carry(previous.gateway, engine)
            redactor = self._redactor(config, environ)
            if self.writer is not None:
                self.writer.redactor = redactor
            self.pricer.update(config.lanes)
        limits = key_limits(config, self.clock, pricer=self.pricer, ledger=self._ledger(config))
        if limits is not None and previous is not None and previous.gateway.limits is not None:
            limits.refusals = previous.gateway.limits.refusals  # counters go on across reloads
        gateway = Gateway(
            engine,
            environ,
            metrics=self.metrics,
            telemetry=self.writer,
            limits=limits,
            config_id=config_id,
        )
        ledger = None if limits is None else limits.ledger
        uses: list[Closable] = [self.transport, store, cache]
        if ledger is not None:
            uses.append(ledger)
        self.current = Generation(gateway, uses)
        self._kept = _Kept(config, store, cache, ledger)
        if config_id is not None:
            self.metrics.config.generation = config_id.generation
            self.metrics.config.hash = config_id.hash
        if config.state.url is not None:  # Redis: its driver is imported only then
            from laneway.state import FallbackStore

            if isinstance(store, FallbackStore):
                self.metrics.watch_state(store)
        return self.current

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
        redactor = Redactor(self._secrets)
        redact_logs(redactor)
        return redactor

    def _store(self, config: LanewayConfig, kept: _Kept | None) -> SourceStore:
        """Shared state (Redis) is kept while ``state:`` is unchanged; local state is new,
        and ``carry_states`` moves the unchanged sources' states into it."""
        same = kept is not None and config.state == kept.config.state
        if same and kept is not None and not isinstance(kept.store, MemoryStore):
            return kept.store
        return open_store(config.state.url, self.clock, config.state.fallback_share)

    def _ledger(self, config: LanewayConfig) -> KeyLedger | None:
        """The key ledger, the same one while ``state:`` is unchanged: every remaining key's
        windows, slots and spend go on (a raised budget does not forget today's spend)."""
        if not any(key.limited for key in config.server.keys):
            return None
        kept = self._kept
        if kept is not None and kept.ledger is not None and config.state == kept.config.state:
            return kept.ledger
        return open_key_ledger(config.state.url, self.clock)


def build_gateway(
    config: LanewayConfig,
    environ: Mapping[str, str],
    base_dir: Path,
    *,
    access_log: LogFormat | None = None,
    share: Path | None = None,
) -> Gateway:
    """The gateway of ``config`` alone, with no reloads (see ``Composer`` for the arguments)."""
    composer = Composer(config, environ, base_dir, access_log=access_log, share=share)
    return composer.generation(config, environ, None).gateway
