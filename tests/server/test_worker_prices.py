"""The supervisor looks up the lanes' prices before it forks, so workers only read them.

A worker cannot search the price catalogue in a forked child (uvicorn's ping thread
runs in it), so a search there keeps the catalogue's data set in every worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.accounting import Pricer
from laneway.app.pricing import pricer_for
from laneway.config.models import LanewayConfig
from laneway.serving import forking
from tests.helpers import record_catalogue_searches

SOURCE = ("gpt-4o", "http://127.0.0.1:1/v1")


@pytest.fixture
def searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, str]]]:
    """Every catalogue search, made here (no fork), into a cache folder of the test's own."""
    return record_catalogue_searches(monkeypatch, str(tmp_path))


def lanes(**price: float) -> LanewayConfig:
    source = {"model": SOURCE[0], "base_url": SOURCE[1], **({"price": price} if price else {})}
    return LanewayConfig.model_validate({"lanes": {"l": {"sources": [source]}}})


def test_a_worker_finds_the_prices_the_supervisor_looked_up(
    searched: list[list[tuple[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forking, "can_fork", lambda: True)
    config = lanes()
    forking.price_ahead(lambda: pricer_for(config))
    pricer_for(config)  # what each worker does as it builds its gateway
    assert searched == [[SOURCE]], "the worker answered from the cache file"


def test_a_supervisor_that_cannot_fork_leaves_the_search_to_the_workers(
    searched: list[list[tuple[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forking, "can_fork", lambda: False)
    forking.price_ahead(lambda: pricer_for(lanes()))
    assert searched == []


def test_own_prices_need_no_search(
    searched: list[list[tuple[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forking, "can_fork", lambda: True)
    forking.price_ahead(lambda: pricer_for(lanes(input=1.0, output=2.0)))
    assert searched == []


def test_a_failed_lookup_leaves_it_to_the_workers(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> Pricer:
        raise OSError("no room")

    monkeypatch.setattr(forking, "can_fork", lambda: True)
    forking.price_ahead(broken)
    assert "prices not looked up before the workers start" in caplog.text
