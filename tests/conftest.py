"""Shared fixtures: one loopback simulator for the session, and lane builders.

No test reaches beyond 127.0.0.1: every upstream is ``laneway sim``.
"""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from laneway.accounting.price_cache import CACHE_DIR_ENV
from laneway.sim import RunningSim, start_in_thread
from tests.state.conftest import redis_client, redis_prefix
from tests.virtual import VirtualSim

__all__ = ["redis_client", "redis_prefix"]
"""Redis fixtures for every directory: a Redis that does not answer skips locally, fails in CI."""

MEMORY_FOLDER = Path("/dev/shm")
"""A tmpfs on Linux: where the session's price cache lives when this machine has one."""

gc.freeze()


def pytest_collectreport() -> None:
    """Exempt what each collected module loaded from the collector's full passes (``gc.freeze``).

    The test modules import about 4,800 modules (the SDKs' type trees among
    them), and every full collection would walk their objects again, though
    none of them is ever garbage: about 2 s of a run. Frozen as they load (and
    what pytest and ``laneway`` made before, above), they leave the collector
    only the objects the tests make.
    """
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def price_cache_dir() -> Iterator[None]:
    """The catalogue's answers cached in a folder of the session's own, never the user's.

    In memory where the machine has a tmpfs: nearly every test builds an
    engine on a sim URL of its own, so the cache file is replaced each time,
    and on ext4 replacing a file by rename waits for its data to reach the
    disk (3-7 ms, about half of building an engine; 0.3 ms on tmpfs).
    """
    memory = MEMORY_FOLDER if os.access(MEMORY_FOLDER, os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(prefix="laneway-cache-", dir=memory) as folder,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv(CACHE_DIR_ENV, folder)
        yield


@pytest.fixture(scope="session")
def sim() -> Iterator[RunningSim]:
    """The simulator, over real loopback HTTP."""
    running = start_in_thread()
    yield running
    running.stop()


@pytest.fixture
def vsim() -> VirtualSim:
    """The simulator in the test's own loop, on a fresh virtual clock (see ``tests.virtual``)."""
    return VirtualSim()
