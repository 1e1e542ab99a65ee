"""``build_engine``: an ``Engine`` with its store, cache, transport and lanes made.

Every concrete adapter the engine uses is chosen here, from the
configuration: the aiohttp transport (wrapped to redact the configuration's
secrets when it has any), the source store ``state.url`` names (in-process,
or Redis with an in-process fallback), the cache ``cache.url`` names (guarded
so its failures read as misses) and the lanes, each source bound to its
provider adapter through the registry.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from laneway.app.lanes import build_lanes
from laneway.app.policies import routes
from laneway.cache import CacheStore, GuardedCache, NoCache, open_cache
from laneway.clocks import SystemClock
from laneway.config.models import LanewayConfig
from laneway.config.secrets import redactor_for
from laneway.core.clock import Clock
from laneway.core.records import CallObserver, RecordPricer, no_prices
from laneway.core.redact import Redactor
from laneway.core.transport import Transport
from laneway.engine.call import CallLoop
from laneway.engine.gateway import Engine
from laneway.engine.redaction import RedactingTransport
from laneway.http.aiohttp import AiohttpTransport
from laneway.state import SourceStore, open_store
from laneway.state.admission.memory import MemoryStore


def open_transport() -> Transport:
    """The transport that reaches upstreams: pooled aiohttp connections."""
    return AiohttpTransport()


def build_engine(
    config: LanewayConfig,
    environ: Mapping[str, str],
    *,
    base_dir: Path | None = None,
    transport: Transport | None = None,
    cache: CacheStore | None = None,
    fresh: bool = False,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    observers: Sequence[CallObserver] = (),
    price: RecordPricer = no_prices,
    redactor: Redactor | None = None,
    source_store: SourceStore | None = None,
) -> Engine:
    """The engine of ``config``, its secrets read from ``environ``.

    ``base_dir`` is the config file's folder: a relative ``cache.url`` starts
    there, and without one the cache is a file beside the config (in memory
    when there is no file: ``None``). ``transport`` defaults to
    ``open_transport()``; ``cache`` replaces the store ``cache.url`` names,
    and ``fresh`` keeps no cache at all (every call reaches the upstream).
    ``observers`` receive every finished call, priced by ``price``.
    ``source_store`` replaces the store ``state.url`` names (a reload keeps its
    Redis store).
    """
    clock = clock or SystemClock()
    redactor = redactor or redactor_for(config, environ)
    wire = transport or open_transport()
    if redactor.active:
        wire = RedactingTransport(wire, redactor)
    if fresh:
        cache = NoCache()
    store = cache or open_cache(config.cache.url, base_dir)
    state = config.state
    sources = source_store or open_store(state.url, clock, state.fallback_share, state.timeout)
    return Engine(
        routes(config),
        build_lanes(config, environ),
        transport=wire,
        store=sources,
        cache=GuardedCache(store, clock),
        clock=clock,
        rng=rng,
        observers=observers,
        price=price,
        redactor=redactor,
    )


def local_call_loop(clock: Clock, rng: random.Random | None = None) -> CallLoop:
    """A call loop over this process's own source state, whatever ``state.url`` says.

    For replays in virtual time (``laneway size``), where shared state would
    mix a simulation's marks with the real lanes'.
    """
    return CallLoop(clock, rng, MemoryStore(clock))
