"""What one ``laneway serve`` runs: a reloading gateway, or a supervisor and its workers.

``Served`` holds what the command decided (the config read and checked, the
bind, the access log, the status file) and builds the process that serves
it: one process answering SIGHUP itself, or a ``Supervisor`` whose workers
each build theirs with ``worker_gateway``. It keeps the status file that
``laneway reload`` reads and removes it, and the workers' folder, at exit.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from laneway.app.assembly import snapshot_metrics
from laneway.app.checks import Bind, check_config
from laneway.app.composer import Composer
from laneway.app.pricing import pricer_for
from laneway.config.loaded import LoadedConfig
from laneway.metrics import SHARE_DIR_ENV
from laneway.server.access_log import LogFormat
from laneway.server.health import ConfigId
from laneway.server.protocol import LimitedConfig
from laneway.serving.generations import ReloadingGateway
from laneway.serving.published import WorkerConfigs
from laneway.serving.reloader import Reloader, acknowledger, file_source, published_source
from laneway.serving.rundir import ServerStatus, StatusFile

if TYPE_CHECKING:
    from laneway.serving.supervisor import Supervisor

log = logging.getLogger("laneway.serve")


class Served:
    """One ``laneway serve``: builds what serves ``loaded`` and reports its reloads."""

    def __init__(
        self, loaded: LoadedConfig, bind: Bind, access: LogFormat | None, status: StatusFile
    ) -> None:
        self.loaded = loaded
        self.bind = bind
        self.access = access
        self.status = status
        self.state: ServerStatus | None = None
        self.composer: Composer | None = None
        self._share: Path | None = None

    def single_process(self) -> ReloadingGateway:
        """The gateway of one process, reloading the config file on SIGHUP."""
        loaded = self.loaded
        composer = Composer(loaded.path.parent, access_log=self.access)
        self.composer = composer
        first = composer.generation(loaded.config, loaded.environ, ConfigId(1, loaded.hash))
        reloader = Reloader(composer, file_source(loaded.path), self.check, self.report)
        return ReloadingGateway(first, on_startup=reloader.install)

    def supervisor(self, settings: LimitedConfig, sock: socket.socket) -> Supervisor:
        """The workers' supervisor, their private folder made (metrics, published configs).

        Imported here: one worker (the default) needs none of it (uvicorn's
        ``Multiprocess``, ``multiprocessing``).
        """
        from laneway.serving.supervisor import Supervisor

        self._share = Path(tempfile.mkdtemp(prefix="laneway-workers-"))  # private: mode 0700
        os.environ[SHARE_DIR_ENV] = str(self._share)  # workers inherit the environment
        assert self.state is not None, "started() comes first"
        return Supervisor(
            settings,
            [sock],
            first=self.loaded,
            check=self.check,
            configs=WorkerConfigs(self._share),
            status=self.status,
            initial=self.state,
            metrics=snapshot_metrics(self._share, os.getpid()),
            prices=lambda loaded: pricer_for(loaded.config),
        )

    def check(self, loaded: LoadedConfig) -> None:
        """Refuse (``ConfigError``) a config this server would not serve on its bind."""
        check_config(loaded, self.bind)

    def started(self, url: str, workers: int) -> None:
        """Write the status file, now that the URL is known."""
        self.state = ServerStatus(
            pid=os.getpid(),
            config=str(self.loaded.path),
            url=url,
            host=self.bind.host,
            insecure=self.bind.insecure,
            workers=workers,
            generation=1,
            hash=self.loaded.hash,
        )
        self._write(self.state)

    def describe(self) -> str:
        """The banner's line on reloading."""
        return (
            f"reload: SIGHUP to pid {os.getpid()}, or `laneway reload` (status in "
            f"{self.status.path}); config {self.loaded.hash}, generation 1"
        )

    def report(self, generation: int, hash_: str, error: str | None) -> None:
        """Record a reload's outcome (one process): status file and metrics."""
        assert self.state is not None and self.composer is not None
        self.composer.metrics.config.reloaded("refused" if error else "applied")
        self.state = self.state.refused(error) if error else self.state.reloaded(generation, hash_)
        self._write(self.state)

    def stopped(self) -> None:
        """Remove the status file and the workers' folder."""
        self.status.remove()
        if self._share is not None:
            shutil.rmtree(self._share, ignore_errors=True)

    def _write(self, state: ServerStatus) -> None:
        try:
            self.status.write(state)
        except OSError as exc:
            log.warning(
                "status file %s not written (laneway reload needs it): %s", self.status.path, exc
            )


def worker_gateway(share: Path, bind: Bind, access: LogFormat | None) -> ReloadingGateway:
    """One worker's gateway over the supervisor's published config, reloading on SIGHUP."""
    configs = WorkerConfigs(share)
    published = configs.published()
    loaded = published.loaded()
    composer = Composer(loaded.path.parent, access_log=access, share=share)
    config_id = ConfigId(published.generation, loaded.hash)
    first = composer.generation(loaded.config, loaded.environ, config_id)
    pid = os.getpid()
    configs.acknowledge(pid, published.generation, None)
    reloader = Reloader(
        composer,
        published_source(configs),
        lambda loaded: check_config(loaded, bind),
        acknowledger(configs, pid),
    )

    def startup(app: ReloadingGateway) -> None:
        reloader.install(app)
        reloader.requested()  # a config published while this worker started

    return ReloadingGateway(first, on_startup=startup)
