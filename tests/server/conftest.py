"""Fixtures of the gateway tests (the ``sim`` fixture comes from ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A raw HTTP client for error cases."""
    async with aiohttp.ClientSession() as session:
        yield session
