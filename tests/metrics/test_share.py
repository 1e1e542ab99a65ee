"""Workers' snapshots: counters and buckets summed, stale gauges dropped, own file skipped."""

from __future__ import annotations

import os
import time
from pathlib import Path

from laneway.metrics import Metrics, SharedFolder, render_metrics
from tests.metrics.test_metrics import KNOWN, Queue, price, record, samples, value


def worker(folder: Path, pid: int, calls: int) -> Metrics:
    m = Metrics(price, SharedFolder(folder, pid))
    m.watch_queue(Queue())
    for _ in range(calls):
        m.observe(record(KNOWN))
    m.responded(200)
    return m


def test_a_scrape_sums_every_worker_with_its_own_live_figures(tmp_path) -> None:
    first, second = worker(tmp_path, 1, calls=2), worker(tmp_path, 2, calls=3)
    first.write_snapshot()
    second.write_snapshot()
    first.observe(record(KNOWN))  # live, after its snapshot: counted from memory, not the file
    found = samples(first)
    assert value(found, "laneway_requests_total", lane="l", source="s", outcome="ok") == 6
    assert value(found, "laneway_responses_total", status="200") == 2
    assert value(found, "laneway_latency_seconds_count", lane="l") == 6
    assert value(found, "laneway_latency_seconds_bucket", lane="l", le="0.5") == 6
    assert value(found, "laneway_cost_usd_total", lane="l", source="s", basis="priced") == 1.5
    assert value(found, "laneway_telemetry_queue_depth") == 8
    assert value(found, "laneway_telemetry_written_total") == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.json", "2.json"]  # no temp left


def test_a_dead_workers_counters_stay_and_its_gauges_go(tmp_path) -> None:
    live, dead = worker(tmp_path, 1, calls=1), worker(tmp_path, 2, calls=4)
    SharedFolder(tmp_path, 2).write(dead.registry.collect(), now=time.time() - 60)
    found = samples(live)
    assert value(found, "laneway_requests_total", lane="l", source="s", outcome="ok") == 5
    assert value(found, "laneway_telemetry_dropped_total") == 4
    assert value(found, "laneway_telemetry_queue_depth") == 4  # the live worker's only


def test_an_unreadable_snapshot_is_skipped(tmp_path) -> None:
    live = worker(tmp_path, 1, calls=1)
    (tmp_path / "2.json").write_bytes(b'{"written": 1')
    found = samples(live)
    assert value(found, "laneway_requests_total", lane="l", source="s", outcome="ok") == 1


def test_one_process_renders_as_before_and_writes_nothing(tmp_path) -> None:
    alone, shared = Metrics(price), worker(tmp_path, os.getpid(), calls=0)
    alone.observe(record(KNOWN))
    alone.write_snapshot()
    shared.observe(record(KNOWN))
    body, _ = render_metrics(alone)
    assert b'laneway_requests_total{lane="l",outcome="ok",source="s"} 1.0' in body
    assert samples(alone).items() <= samples(shared).items()


class State:
    def __init__(self, degraded: bool) -> None:
        self.degraded, self.outages, self.local_grants, self.replicas = degraded, 1, 0, 2


def test_shared_state_is_up_only_if_every_worker_reaches_it(tmp_path) -> None:
    up, down = worker(tmp_path, 1, calls=0), worker(tmp_path, 2, calls=0)
    up.watch_state(State(degraded=False))
    down.watch_state(State(degraded=True))
    down.write_snapshot()
    found = samples(up)
    assert value(found, "laneway_state_backend_up") == 0
    assert value(found, "laneway_state_replicas") == 2
    assert value(found, "laneway_state_outages_total") == 2


class KeyLedger(State):
    def __init__(self, degraded: bool, replayed: int) -> None:
        super().__init__(degraded)
        self.replayed = replayed


def test_key_limits_are_on_redis_only_if_every_worker_reaches_it(tmp_path) -> None:
    up, down = worker(tmp_path, 1, calls=0), worker(tmp_path, 2, calls=0)
    up.watch_key_ledger(KeyLedger(degraded=False, replayed=0))
    up.watch_key_ledger(KeyLedger(degraded=False, replayed=3))  # a reload opened another
    down.watch_key_ledger(KeyLedger(degraded=True, replayed=4))
    down.write_snapshot()
    found = samples(up)
    assert value(found, "laneway_key_ledger_backend_up") == 0
    assert value(found, "laneway_key_ledger_replicas") == 2
    assert value(found, "laneway_key_ledger_replayed_total") == 7, "the ledger in service"
