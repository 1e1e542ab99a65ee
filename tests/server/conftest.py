"""Fixtures of the gateway tests (the ``sim`` fixture comes from ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

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
