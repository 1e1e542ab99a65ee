"""Workers' metrics in a shared folder, so one scrape reports the whole server.

Under ``laneway serve --workers N`` each worker keeps its own figures and a
scrape reaches whichever worker accepted it. Each worker therefore writes a
snapshot of its collected samples to the folder the supervisor made every
``server.worker_snapshot_interval`` (one file per pid, written to a temporary
name and renamed, so a reader never sees half of one), and the scraped worker
adds every other worker's snapshot to its own live figures. Counters and
histogram buckets are totals and are summed whatever their age: a dead
worker's calls still happened. Gauges (connections open, telemetry queue
depth) describe the present, so a snapshot older than ``GAUGE_MAX_AGE``
contributes none. Gauges that state
one shared fact rather than a share of the load are not summed (``COMBINE``).
A snapshot also carries the worker's status-page history (``history``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

SHARE_DIR_ENV = "LANEWAY_METRICS_DIR"
"""The folder of the workers' snapshots (set by ``laneway serve --workers``)."""
GAUGE_MAX_AGE = 5.0
"""Seconds after which a snapshot's gauges no longer count (its worker is gone or stuck);
twice the longest ``server.worker_snapshot_interval``."""

COMBINE: dict[str, Callable[[float, float], float]] = {
    "laneway_state_backend_up": min,
    "laneway_state_replicas": max,
    "laneway_config_generation": min,
    "laneway_key_ledger_backend_up": min,
    "laneway_key_ledger_replicas": max,
}
"""Gauges merged otherwise than by sum: shared state is up only if every worker
reaches it, every worker sees the same replicas (the freshest count is the highest),
and the server serves a config generation once every worker does (the lowest)."""

_Key = tuple[str, tuple[tuple[str, str], ...]]


class SharedFolder:
    """This worker's snapshot file in ``folder`` and its readings of the others'."""

    def __init__(self, folder: Path, pid: int | None = None) -> None:
        self.folder = folder
        self.pid = os.getpid() if pid is None else pid
        self.path = folder / f"{self.pid}.json"

    def write(
        self, families: Iterable[Metric], now: float | None = None, history: list[Any] | None = None
    ) -> None:
        """Replace this worker's snapshot with ``families`` atomically (temp file + rename).

        ``history`` is the worker's ``History.dump()``, for the status page.
        """
        written = time.time() if now is None else now
        data = {"written": written, "families": [_dump(f) for f in families], "history": history}
        temp = self.folder / f".{self.pid}.tmp"
        temp.write_bytes(orjson.dumps(data))
        os.replace(temp, self.path)

    def merged(self, own: Iterable[Metric], now: float | None = None) -> list[Metric]:
        """``own`` live families plus every other worker's snapshot, sample by sample."""
        at = time.time() if now is None else now
        merger = _Merger()
        for family in own:
            merger.add(family.name, family.type, family.documentation, _samples(family))
        for snapshot in self._others():
            fresh = at - float(snapshot["written"]) <= GAUGE_MAX_AGE
            for name, typ, doc, samples in snapshot["families"]:
                if typ != "gauge" or fresh:
                    merger.add(name, typ, doc, samples)
        return merger.families()

    def histories(self) -> list[list[Any]]:
        """The other workers' status histories (``History.dump`` lists)."""
        return [snapshot["history"] for snapshot in self._others() if snapshot.get("history")]

    def _others(self) -> list[dict[str, Any]]:
        """The other workers' snapshots (a file vanishing or unreadable mid-read is skipped)."""
        out = []
        for path in self.folder.glob("*.json"):
            if path == self.path:
                continue
            try:
                out.append(orjson.loads(path.read_bytes()))
            except (OSError, orjson.JSONDecodeError):
                continue
        return out


def _dump(family: Metric) -> list[Any]:
    return [family.name, family.type, family.documentation, _samples(family)]


def _samples(family: Metric) -> list[list[Any]]:
    return [[s.name, s.labels, s.value] for s in family.samples]


class _Merger:
    """Sums samples of the same name and labels, keeping first-seen order."""

    def __init__(self) -> None:
        self._heads: dict[str, tuple[str, str]] = {}
        self._values: dict[str, dict[_Key, float]] = {}

    def add(self, name: str, typ: str, doc: str, samples: list[list[Any]]) -> None:
        if name not in self._heads:
            self._heads[name] = (typ, doc)
            self._values[name] = {}
        values = self._values[name]
        combine = COMBINE.get(name, float.__add__)
        for sample_name, labels, value in samples:
            key = (sample_name, tuple(labels.items()))
            known = values.get(key)
            values[key] = float(value) if known is None else combine(known, float(value))

    def families(self) -> list[Metric]:
        out = []
        for name, (typ, doc) in self._heads.items():
            family = Metric(name, doc, typ)
            for (sample_name, labels), value in self._values[name].items():
                family.add_sample(sample_name, dict(labels), value)
            out.append(family)
        return out


class _Fixed(Collector):
    """Yields families already built (the merged ones) to ``generate_latest``."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def registry_of(families: list[Metric]) -> CollectorRegistry:
    """A throwaway registry exposing ``families`` as they are."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(families))
    return registry
