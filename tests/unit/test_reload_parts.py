"""The pieces of a config reload, without a server: what is carried, swapped, reported."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from laneway.accounting.pricer import Pricer
from laneway.app import build_lanes
from laneway.app.carry import carry_states
from laneway.app.checks import Bind, check_config
from laneway.app.composer import Composer
from laneway.clocks import SystemClock
from laneway.config.loaded import read_config
from laneway.config.models import LanewayConfig, ServerConfig
from laneway.core.errors import ConfigError
from laneway.metrics import Metrics, SharedFolder
from laneway.policy.pacer import Pacer
from laneway.server.health import ConfigId
from laneway.serving.generations import Generation, ReloadingGateway
from laneway.serving.reloader import restart_only_changes
from laneway.serving.rundir import ServerStatus, StatusFile, running_servers
from laneway.state import Ask, MemoryStore


def settings(steady_rpm: int = 3, changed_rpm: int = 2, *, weight: int = 1) -> LanewayConfig:
    return LanewayConfig.model_validate(
        {
            "deployments": {
                "steady": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "rpm": steady_rpm},
                "changed": {"base_url": "http://127.0.0.1:9/v1", "model": "n", "rpm": changed_rpm},
            },
            "lanes": {
                "a": {
                    "sources": [
                        {"deployment": "steady", "weight": weight},
                        {"deployment": "changed"},
                    ]
                },
                "inline": {
                    "sources": [
                        {
                            "base_url": "http://127.0.0.1:9/v1",
                            "model": "m",
                            "concurrency": {"max": 4},
                        }
                    ]
                },
            },
        }
    )


async def reserve(store: MemoryStore, scope: str, key: str, rpm: int, ticket: str) -> bool:
    admission = await store.admit(scope, [key], [Ask(key, ticket, rpm=rpm)])
    return admission.granted is not None


def test_unchanged_sources_keep_their_state_and_changed_ones_start_fresh() -> None:
    async def scenario() -> None:
        old_lanes, old_store = build_lanes(settings(), {}), MemoryStore(SystemClock())
        for n in range(3):
            assert await reserve(old_store, "deployments", "deployment:steady", 3, f"s{n}")
        for n in range(2):
            assert await reserve(old_store, "deployments", "deployment:changed", 2, f"c{n}")
        old_inline = old_lanes["inline"]
        pacer = old_inline.memory.pacer(old_inline.sources[0])
        assert isinstance(pacer, Pacer)
        old_lanes["a"].memory.pushed_back["deployment:steady"] = 99.0

        new_lanes, store = (
            build_lanes(settings(changed_rpm=3, weight=5), {}),
            MemoryStore(SystemClock()),
        )
        carried = carry_states(old_lanes, new_lanes, old_store, store)
        assert set(carried.kept) == {"deployment:steady", "openai:m"}
        assert carried.fresh == ("deployment:changed",)
        assert not await reserve(store, "deployments", "deployment:steady", 3, "s-after")
        assert all(
            [
                await reserve(store, "deployments", "deployment:changed", 3, f"n{i}")
                for i in range(3)
            ]
        )
        assert new_lanes["inline"].memory.pacers["openai:m"] is pacer  # AIMD limit and slots
        assert new_lanes["a"].memory.pushed_back["deployment:steady"] == 99.0  # Retry-After mark
        assert new_lanes["inline"].memory.waiters is old_inline.memory.waiters

    asyncio.run(scenario())


class _Closable:
    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


class _Gateway:
    """Stands in for a ``Gateway``: each request waits until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.served = 0
        self.config_id = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.served += 1
        await self.release.wait()


def test_a_swap_drains_the_old_config_before_closing_only_what_it_alone_used() -> None:
    async def scenario() -> None:
        shared, old_only, new_only = _Closable(), _Closable(), _Closable()
        old_gateway, new_gateway = _Gateway(), _Gateway()
        old = Generation(old_gateway, [shared, old_only])  # type: ignore[arg-type]
        app = ReloadingGateway(old)
        old.in_flight += 1
        old.left()  # an earlier call ended: the old config was idle once, which must not count
        http = {"type": "http"}
        in_flight = asyncio.create_task(app(http, None, None))  # type: ignore[arg-type]
        await asyncio.sleep(0)
        app.swap(Generation(new_gateway, [shared, new_only]), drain_timeout=60)  # type: ignore[arg-type]
        after = asyncio.create_task(app(http, None, None))  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert (old_gateway.served, new_gateway.served) == (1, 1)
        assert app.draining == 1 and old_only.closed == 0
        old_gateway.release.set()
        await in_flight
        for _ in range(3):
            await asyncio.sleep(0)
        assert (old_only.closed, shared.closed, new_only.closed) == (1, 0, 0)
        new_gateway.release.set()
        await after

    asyncio.run(scenario())


def test_the_pricer_extends_itself_to_a_reloaded_config_and_keeps_old_lanes() -> None:
    priced = {"base_url": "http://x/v1", "model": "m", "price": {"input": 1.0, "output": 2.0}}
    first = LanewayConfig.model_validate({"lanes": {"a": {"sources": [priced]}}})
    second = LanewayConfig.model_validate({"lanes": {"b": {"sources": [priced]}}})
    pricer = Pricer.for_lanes(first.lanes)
    pricer.update(second.lanes)
    assert {lane for lane, _ in pricer.entries} == {"a", "b"}
    assert all(entry is not None for entry in pricer.entries.values())


def test_check_refuses_what_serving_would_refuse(tmp_path: Path) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text("lanes:\n  a: {sources: [{base_url: 'http://127.0.0.1:9/v1', model: m}]}\n")
    loaded = read_config(path)
    check_config(loaded, Bind("127.0.0.1"))
    with pytest.raises(ConfigError, match=r"no server\.keys"):
        check_config(loaded, Bind("0.0.0.0"))
    check_config(loaded, Bind("0.0.0.0", insecure=True))
    path.write_text(
        "lanes:\n  a: {sources: [{base_url: 'http://127.0.0.1:9/v1', model: m, rpm: -1}]}\n"
    )
    with pytest.raises(ConfigError, match=r"laneway.yaml:2"):
        read_config(path)
    moved = loaded.config.model_copy(
        update={"server": loaded.config.server.model_copy(update={"port": 4100})}
    )
    assert restart_only_changes(loaded.config, moved) == ["server.port"]
    snapshots = loaded.config.model_copy(
        update={"server": ServerConfig(worker_snapshot_interval="250ms")}
    )
    assert restart_only_changes(loaded.config, snapshots) == ["server.worker_snapshot_interval"]


@pytest.mark.parametrize("interval", ["50ms", "3s"])
def test_the_worker_snapshot_interval_stays_within_its_bounds(interval: str) -> None:
    with pytest.raises(ValidationError, match="worker_snapshot_interval"):
        ServerConfig(worker_snapshot_interval=interval)


def test_status_file_round_trip_and_discovery(tmp_path: Path) -> None:
    import os

    status = ServerStatus(
        os.getpid(), "/etc/laneway.yaml", "http://127.0.0.1:4000", "127.0.0.1", False, 1, 1, "abc"
    )
    file = StatusFile(tmp_path, os.getpid())
    file.write(status.reloaded(2, "def").refused("bad"))
    read = file.read()
    assert read is not None and (read.generation, read.hash, read.reloads) == (2, "def", 2)
    assert read.last is not None and (read.last.outcome, read.last.reason) == ("refused", "bad")
    dead = 2**22 + 1  # above pid_max: no such process, so not listed
    StatusFile(tmp_path, dead).write(replace(status, pid=dead))
    assert [s.pid for s in running_servers(tmp_path)] == [os.getpid()]
    file.remove()
    assert file.read() is None


def test_workers_report_the_lowest_generation_and_how_many_serve_each_hash(tmp_path: Path) -> None:
    ahead, behind = (
        Metrics(share=SharedFolder(tmp_path, pid=1)),
        Metrics(share=SharedFolder(tmp_path, pid=2)),
    )
    ahead.config.generation, ahead.config.hash = 3, "new"
    behind.config.generation, behind.config.hash = 2, "old"
    behind.write_snapshot()
    text = ahead.render()[0].decode()
    assert "laneway_config_generation 2.0" in text
    assert (
        'laneway_config_info{hash="new"} 1.0' in text
        and 'laneway_config_info{hash="old"} 1.0' in text
    )


def test_healthz_counts_calls_draining_on_the_previous_config(tmp_path: Path) -> None:
    path = tmp_path / "laneway.yaml"
    path.write_text("lanes:\n  a: {sources: [{base_url: 'http://127.0.0.1:9/v1', model: m}]}\n")
    loaded = read_config(path)
    composer = Composer(tmp_path)
    old = composer.generation(loaded.config, loaded.environ, ConfigId(1, loaded.hash)).gateway
    new = composer.generation(loaded.config, loaded.environ, ConfigId(2, loaded.hash)).gateway
    with old.calls:
        assert new.in_flight == 1
    assert new.in_flight == 0
