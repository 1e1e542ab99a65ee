"""``Supervisor``: uvicorn's worker supervisor, with SIGHUP as a reload of every worker.

uvicorn's own SIGHUP restarts every worker, which cuts their calls in flight.
Here the supervisor reads and checks the config file once: a bad one is
refused with one log line and no worker hears of it. A good one is published
to the workers (``serving.published``) and each is sent SIGHUP, which it
answers by swapping the new config in place: no worker restarts, no
connection drops. The supervisor's loop collects the workers' acknowledgements
and writes the outcome to the status file; it counts reloads in its own
metrics snapshot, which every worker's scrape adds.

uvicorn's loop looks at its signals every half second, so a reload was
answered, and a SIGTERM began the drain, up to a second late. Here a signal
wakes the loop at once (``signal.set_wakeup_fd``) and a reload under way is
checked every ``ACK_POLL_SECONDS``; the workers are still watched (a ping
each) every ``WATCH_SECONDS``, as uvicorn does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from laneway.config.loaded import LoadedConfig, read_config
from laneway.metrics import Metrics
from laneway.server.protocol import LimitedConfig
from laneway.serving.forking import ForkedWorker, preload, price_ahead
from laneway.serving.published import WorkerConfigs
from laneway.serving.rundir import ServerStatus, StatusFile

log = logging.getLogger("laneway.serve")
uvicorn_log = logging.getLogger("uvicorn.error")

ACK_TIMEOUT = 60.0
"""Seconds the supervisor waits for every worker to say it serves a published config."""
WATCH_SECONDS = 0.5
"""How often the workers are pinged and a dead one replaced (uvicorn's pace)."""
ACK_POLL_SECONDS = 0.02
"""How often a reload under way reads the workers' acknowledgements (a file each)."""


@dataclass(slots=True)
class _Pending:
    """A published generation not yet acknowledged by every worker."""

    generation: int
    hash: str
    due: float


class Supervisor(Multiprocess):
    """Runs the workers; SIGHUP reloads the config in each of them (see the module doc)."""

    def __init__(
        self,
        config: LimitedConfig,
        sockets: list[socket.socket],
        *,
        first: LoadedConfig,
        check: Callable[[LoadedConfig], None],
        configs: WorkerConfigs,
        status: StatusFile,
        initial: ServerStatus,
        metrics: Metrics,
        prices: Callable[[LoadedConfig], object],
    ) -> None:
        super().__init__(config, sockets)
        self.path = first.path
        self.check = check
        self.configs = configs
        self.status = status
        self.state = initial
        self.generation = 1
        self.pending: _Pending | None = None
        self.metrics = metrics
        self.first = first
        self.prices = prices
        """Prices a config's lanes (the composition root's pricer): ``forking.price_ahead``."""
        self.providers = {s.provider for lane in first.config.lanes.values() for s in lane.sources}
        configs.publish(1, first)

    def handle_hup(self) -> None:
        """Check the file; refuse it, or publish it and tell every worker."""
        try:
            loaded = read_config(self.path)
            self.check(loaded)
            price_ahead(lambda: self.prices(loaded))
            self.configs.publish(self.generation + 1, loaded)
        except Exception as exc:  # any failure is a refusal: the supervisor and workers go on
            reason = str(exc) or type(exc).__name__
            log.error(
                "reload refused; still serving config generation %d (%s): %s",
                self.state.generation,
                self.state.hash,
                reason,
            )
            self._finish(self.state.refused(reason), "refused")
            return
        self.generation += 1
        self.pending = _Pending(self.generation, loaded.hash, time.monotonic() + ACK_TIMEOUT)
        for process in self.processes:
            # A worker that has not yet said which config it serves is still starting: SIGHUP
            # could end it before it ignores the signal, and it loads the newest config anyway.
            if process.pid is not None and self.configs.acknowledged(process.pid)[0]:
                os.kill(process.pid, signal.SIGHUP)
        log.info(
            "config generation %d (%s) sent to %d worker(s)",
            self.generation,
            loaded.hash,
            len(self.processes),
        )

    def run(self) -> None:
        """Start the workers and supervise them until SIGINT or SIGTERM, then stop them.

        uvicorn's ``Multiprocess.run``, with the loop woken by signals (see the module doc).
        """
        wake, waker = socket.socketpair()
        wake.setblocking(False)
        waker.setblocking(False)
        previous = signal.set_wakeup_fd(waker.fileno())
        try:
            uvicorn_log.info("Started parent process [%d]", os.getpid())
            preload(self.providers, lambda: self.prices(self.first))
            self.init_processes()
            self._supervise(wake)
            self.terminate_all()
            self.join_all()
            uvicorn_log.info("Stopping parent process [%d]", os.getpid())
        finally:
            signal.set_wakeup_fd(previous)
            wake.close()
            waker.close()

    def init_processes(self) -> None:
        """Fork the workers (uvicorn spawns them; see ``laneway.serving.forking``)."""
        for _ in range(self.processes_num):
            process = ForkedWorker(self.config, self.sockets)
            process.start()
            self.processes.append(process)

    def keep_subprocess_alive(self) -> None:
        """Replace a dead or hung worker by a forked one (uvicorn's rule, uvicorn's log lines)."""
        for index, process in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                uvicorn_log.error(
                    "Child process [%s] failed to start, stopping the parent process.", process.pid
                )
                self.should_exit.set()
                return
            uvicorn_log.info("Child process [%s] died", process.pid)
            self.processes[index] = ForkedWorker(self.config, self.sockets)
            self.processes[index].start()

    def _supervise(self, wake: socket.socket) -> None:
        """Answer signals as they come, watch the workers, collect a reload's acknowledgements."""
        watch_due = time.monotonic() + WATCH_SECONDS
        while not self.should_exit.is_set():
            timeout = watch_due - time.monotonic()
            if self.pending is not None:
                timeout = min(timeout, ACK_POLL_SECONDS)
            if select.select([wake], [], [], max(timeout, 0.0))[0]:
                _drain(wake)
            self.handle_signals()
            if time.monotonic() >= watch_due:
                self.keep_subprocess_alive()
                watch_due = time.monotonic() + WATCH_SECONDS
            if self.pending is not None:
                self._collect(self.pending)

    def _collect(self, pending: _Pending) -> None:
        acks = {p.pid: self.configs.acknowledged(p.pid) for p in self.processes if p.pid}
        errors = [f"worker {pid}: {error}" for pid, (_, error) in acks.items() if error]
        if all(generation >= pending.generation for generation, _ in acks.values()):
            log.warning(
                "config reloaded: generation %d (%s) in every worker",
                pending.generation,
                pending.hash,
            )
            self._finish(self.state.reloaded(pending.generation, pending.hash), "applied")
        elif errors:
            reason = "; ".join(errors)
            log.error("reload of generation %d failed in a worker: %s", pending.generation, reason)
            self._finish(self.state.refused(reason), "refused")
        elif time.monotonic() > pending.due:
            late = [pid for pid, (g, _) in acks.items() if g < pending.generation]
            reason = (
                f"worker(s) {', '.join(map(str, late))} did not load it within {ACK_TIMEOUT:.0f} s"
            )
            log.error("reload of generation %d: %s", pending.generation, reason)
            self._finish(self.state.refused(reason), "refused")

    def _finish(self, state: ServerStatus, outcome: str) -> None:
        self.pending = None
        self.state = state
        self.metrics.config.reloaded(outcome)
        try:
            self.metrics.write_snapshot()
            self.status.write(state)
        except OSError as exc:
            log.warning("reload outcome not recorded: %s", exc)


def _drain(wake: socket.socket) -> None:
    """Read the signal numbers written to ``wake``: the handlers have queued the signals."""
    with contextlib.suppress(BlockingIOError):
        while wake.recv(64):
            pass
