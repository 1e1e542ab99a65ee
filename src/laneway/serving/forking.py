"""Workers forked from the supervisor, so that they share its imported modules.

uvicorn spawns each worker: a fresh interpreter that imports the whole stack
again and holds its own copy of every module. Here the supervisor imports
what a worker runs (``preload``), freezes its heap (``gc.freeze``: the
collector then never writes to those objects, so their pages stay shared)
and forks each worker, which shares those pages with the supervisor and its
siblings copy-on-write. The supervisor builds no gateway: a worker builds its
own after the fork, so no connection, event loop or thread crosses it.
"""

from __future__ import annotations

import gc
import importlib
import logging
import multiprocessing
import signal
from collections.abc import Callable, Iterable
from multiprocessing import Pipe
from socket import socket
from typing import Any

from uvicorn._subprocess import subprocess_started
from uvicorn.config import Config
from uvicorn.supervisors.multiprocess import SIGNALS, Process

from laneway.accounting.forked import can_fork

FORK = multiprocessing.get_context("fork")
log = logging.getLogger("laneway.serve")

WORKER_MODULES = (
    "laneway.app.composer",
    "laneway.app.serving",
    "laneway.server.app",
    "laneway.server.budget_alerts",
    "sqlite3",
    "pydantic.type_adapter",
    "uvloop",
    "encodings.idna",
)
"""What every worker imports to build its gateway and run it: the composition root, the
server, budget alerts, uvloop, and the IDNA codec an upstream's host name goes through. Each
was seen imported after the fork by ``python -X importtime -m laneway serve --workers 2``;
preloaded, the two workers' tree held 2.4-3.1 MiB less PSS after 20 s of load, a gain lost in
the heap's growth over five minutes (docs/benchmarks.md)."""

ADAPTERS = {
    "openai": "laneway.providers.openai",
    "azure": "laneway.providers.azure",
    "gemini": "laneway.providers.gemini",
    "anthropic": "laneway.providers.anthropic",
}
"""The module of each ``provider:`` kind, imported before the fork when a source names it."""


def preload(providers: Iterable[str], look_up_prices: Callable[[], object]) -> None:
    """Import a worker's modules and the adapters of ``providers``, look up the lanes'
    prices (``price_ahead``), then freeze the heap.

    Looking prices up imports genai-prices only when a source is priced from its
    catalogue, as a worker would: importing it always held ~1.9 MiB in the
    supervisor, and so in the workers' tree, that the workers of other configs never use.
    """
    for name in (*WORKER_MODULES, *(ADAPTERS[kind] for kind in set(providers) if kind in ADAPTERS)):
        importlib.import_module(name)
    price_ahead(look_up_prices)
    gc.collect()
    gc.freeze()


def price_ahead(look_up_prices: Callable[[], object]) -> None:
    """Price a config's lanes here (the composition root's pricer, then dropped), so that
    the catalogue's answers are in the price cache before the workers ask.

    A worker cannot search the catalogue in a forked child (uvicorn's ping thread runs
    in it: ``can_fork()`` is false), so a worker that searched it kept its data set:
    ~5.5 MiB resident in each worker (measured). Searched first from the supervisor,
    in a child of its own, the answers are in the cache file and a worker only reads
    them. Where the supervisor cannot fork either, or the look-up fails here, the
    workers search as before.
    """
    if not can_fork():
        return
    try:
        look_up_prices()
    except Exception as exc:  # the workers price their lanes themselves, as without this step
        log.warning("prices not looked up before the workers start (they will): %s", exc)


class ForkedWorker(Process):
    """A uvicorn worker forked from the supervisor (spawned where forking is not safe)."""

    def __init__(self, config: Config, sockets: list[socket]) -> None:
        if not can_fork():
            super().__init__(config, sockets)
            return
        self.config = config
        self._server = None
        self.parent_conn, self.child_conn = Pipe()
        kwargs: dict[str, Any] = {"config": config, "target": self.target, "sockets": sockets}
        # uvicorn types the attribute as its SpawnProcess; it only calls what every process has.
        self.process = FORK.Process(target=_forked_started, kwargs=kwargs)  # type: ignore[assignment]


def _forked_started(config: Config, target: Any, sockets: list[socket]) -> None:
    """The worker's first step: drop the supervisor's signal handling, then serve."""
    signal.set_wakeup_fd(-1)
    for number in SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    subprocess_started(config, target, sockets, stdin_fileno=None)
