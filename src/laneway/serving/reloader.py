"""Reloading a serving process's config on SIGHUP, with one worker or many.

With one process, SIGHUP reads the config file again, checks it
(``app.checks.check_config``), builds the new gateway beside the old one and
swaps it in (``serving.generations``); any failure on the way is a refusal, logged
with its reason, and the old config keeps serving. Either way the status file
(``rundir``) says how it ended, for ``laneway reload``.

With ``--workers N`` the supervisor reads and checks the file once, then
publishes the text it checked in the workers' folder (``serving.published``) under
a new generation and sends each worker SIGHUP. A worker's SIGHUP loads the
published generation if it is newer than its own (so a SIGHUP sent to the
whole process group changes nothing by itself) and acknowledges it. A worker
that starts later (one that died and was replaced) builds the published
generation at once, so every worker serves the same config.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from laneway.config.loaded import LoadedConfig, read_config
from laneway.config.models import LanewayConfig
from laneway.metrics.watched import ConfigFigures
from laneway.server.health import ConfigId
from laneway.serving.generations import Generation, ReloadingGateway
from laneway.serving.published import WorkerConfigs
from laneway.serving.rundir import ServerStatus, StatusFile

log = logging.getLogger("laneway.serve")

RESTART_ONLY = (
    "host",
    "port",
    "header_timeout",
    "body_timeout",
    "keepalive_timeout",
    "max_header_bytes",
    "max_headers",
    "max_connections",
    "worker_snapshot_interval",
    "metrics",
)
"""``server:`` settings the listening socket and its connections were made with, the
metrics snapshots' timer, which runs from the worker's start, and whether calls are
counted for ``/metrics`` (the process's record feed is made with its first config)."""


class BuildsGenerations(Protocol):
    """What builds the gateway of each config (``laneway.app.composer.Composer``)."""

    def generation(
        self, config: LanewayConfig, environ: Mapping[str, str], config_id: ConfigId | None
    ) -> Generation: ...


class Reloader:
    """Answers SIGHUP in a serving process: the next config, checked, built and swapped in.

    ``next_config`` gives the config to load (the file, or the supervisor's
    published one) and its generation, or ``None`` when there is nothing
    newer. ``check`` refuses a config that would not serve (``ConfigError``);
    ``composer`` builds the gateway of one that would. ``report`` hears each
    outcome (applied: the generation; refused: the reason).
    """

    def __init__(
        self,
        composer: BuildsGenerations,
        next_config: Callable[[int], tuple[LoadedConfig, int] | None],
        check: Callable[[LoadedConfig], None],
        report: Callable[[int, str, str | None], None],
    ) -> None:
        self.composer = composer
        self.next_config = next_config
        self.check = check
        self.report = report
        self.app: ReloadingGateway | None = None
        self._running: asyncio.Task[None] | None = None
        self._again = False

    def install(self, app: ReloadingGateway) -> None:
        """Answer SIGHUP in the running loop from now on (``ReloadingGateway``'s startup hook)."""
        self.app = app
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.requested)

    def requested(self) -> None:
        """A SIGHUP: reload now, or once more after the reload under way."""
        if self._running is not None and not self._running.done():
            self._again = True
            return
        self._running = asyncio.get_running_loop().create_task(self._reloads())

    async def _reloads(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            self.reload()
            await asyncio.sleep(0)

    def reload(self) -> None:
        """Load the next config and swap it in, or refuse it and keep the one in service."""
        assert self.app is not None
        current = self.app.current.gateway
        config_id = current.config_id
        assert config_id is not None
        began = time.perf_counter()
        try:
            found = self.next_config(config_id.generation)
            if found is None:
                log.debug(
                    "SIGHUP: no newer config published; generation %d stays", config_id.generation
                )
                return
            loaded, generation = found
            self.check(loaded)
            built = self.composer.generation(
                loaded.config, loaded.environ, ConfigId(generation, loaded.hash)
            )
        except Exception as exc:  # any failure is a refusal: the old config keeps serving
            reason = str(exc) or type(exc).__name__
            log.error(
                "reload refused; still serving config generation %d (%s): %s",
                config_id.generation,
                config_id.hash,
                reason,
            )
            self.report(config_id.generation, config_id.hash, reason)
            return
        old_config = current.config
        self.app.swap(built, loaded.config.server.drain_timeout)
        took = time.perf_counter() - began
        described = describe_reload(old_config, loaded, generation, self.app.draining)
        log.warning("%s; checked and built in %.0f ms", described, took * 1000)
        self.report(generation, loaded.hash, None)


def describe_reload(
    old: LanewayConfig, loaded: LoadedConfig, generation: int, draining: int
) -> str:
    """One log line: the new generation, lanes added and removed, and restart-only changes."""
    new = loaded.config
    parts = [f"config reloaded: generation {generation} ({loaded.hash}) serves new calls"]
    added = [name for name in new.lanes if name not in old.lanes]
    removed = [name for name in old.lanes if name not in new.lanes]
    changed = [n for n in new.lanes if n in old.lanes and new.lanes[n] != old.lanes[n]]
    for label, names in (("added", added), ("removed", removed), ("changed", changed)):
        if names:
            parts.append(f"lanes {label}: {', '.join(names)}")
    if old.server.keys != new.server.keys:
        parts.append("keys changed")
    parts.append(f"{draining} call(s) finish on the previous config")
    restart = restart_only_changes(old, new)
    if restart:
        parts.append(f"NOT applied until a restart: {', '.join(restart)}")
    return "; ".join(parts)


def file_source(path: Path) -> Callable[[int], tuple[LoadedConfig, int]]:
    """The config file itself, as the next generation (one process, no supervisor)."""
    return lambda generation: (read_config(path), generation + 1)


def published_source(configs: WorkerConfigs) -> Callable[[int], tuple[LoadedConfig, int] | None]:
    """The supervisor's published config, when newer than the generation in service."""

    def newer(generation: int) -> tuple[LoadedConfig, int] | None:
        published = configs.published()
        if published.generation <= generation:
            return None
        return published.loaded(), published.generation

    return newer


def status_reporter(
    file: StatusFile, first: ServerStatus, figures: ConfigFigures
) -> Callable[[int, str, str | None], None]:
    """Keep the status file and the reload counters up to date (one process)."""
    state = [first]

    def report(generation: int, hash_: str, error: str | None) -> None:
        figures.reloaded("refused" if error else "applied")
        now = state[0].refused(error) if error else state[0].reloaded(generation, hash_)
        state[0] = now
        try:
            file.write(now)
        except OSError as exc:
            log.warning("status file %s not written: %s", file.path, exc)

    return report


def acknowledger(configs: WorkerConfigs, pid: int) -> Callable[[int, str, str | None], None]:
    """Tell the supervisor each outcome (a worker)."""

    def report(generation: int, hash_: str, error: str | None) -> None:
        configs.acknowledge(pid, generation, error)

    return report


def restart_only_changes(old: LanewayConfig, new: LanewayConfig) -> list[str]:
    """The settings that differ between ``old`` and ``new`` and apply only after a restart."""
    changed = [
        f"server.{name}"
        for name in RESTART_ONLY
        if getattr(old.server, name) != getattr(new.server, name)
    ]
    if old.telemetry != new.telemetry:
        changed.append("telemetry")
    return changed
