"""Fixtures of the gateway tests (the ``sim`` fixture comes from ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from laneway.sim import RunningSim
from tests.server.logged_serve import LoggedServe
from tests.server.logged_serve import logged_serve as start_logged_serve
from tests.server.scripted import Scripted, serve_scripted


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A raw HTTP client for error cases."""
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(scope="module")
def scripted() -> Iterator[Scripted]:
    """A gateway whose lanes (``scripted.LANES``) reach a scripted OpenAI upstream."""
    with serve_scripted() as running:
        yield running


@pytest.fixture(scope="session")
def logged_serve(
    sim: RunningSim, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LoggedServe]:
    """One ``laneway serve`` whose access log the tests read (see ``tests.server.logged_serve``)."""
    with start_logged_serve(sim, tmp_path_factory.mktemp("logged-serve")) as running:
        yield running
