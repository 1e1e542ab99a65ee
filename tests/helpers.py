"""Helpers for building lanes that point at the simulator."""

from __future__ import annotations

import itertools
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from laneway.config.models import LanewayConfig

_ids = itertools.count()


class Upstream(Protocol):
    """A simulator to point lanes at: loopback ``RunningSim`` or in-process ``VirtualSim``."""

    @property
    def base_url(self) -> str:
        """Where the simulator answers."""
        ...


def unique_spec(spec: str) -> str:
    """``spec`` with a fresh ``id`` token, so counters and hits are this test's own."""
    tag = f"id=t{next(_ids)}"
    return f"{spec},{tag}" if spec else tag


def sim_url(sim: Upstream, spec: str) -> str:
    """The base URL of a simulated upstream with behaviour ``spec``."""
    return f"{sim.base_url}/b/{spec}/v1"


def one_lane(sim: Upstream, spec: str, name: str = "lane", **lane: Any) -> LanewayConfig:
    """A config with one lane of one source at ``sim`` behaving as ``spec``."""
    source = {"provider": "openai", "base_url": sim_url(sim, spec), "model": "sim-model"}
    body: dict[str, Any] = {"sources": [source], **lane}
    return LanewayConfig.model_validate({"lanes": {name: body}})


def hits(sim: Upstream, spec: str) -> int:
    """Requests a loopback simulator received for ``spec`` (``GET /_hits``)."""
    url = f"{sim.base_url}/_hits?spec={urllib.parse.quote(spec)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        count: int = orjson.loads(response.read())["count"]
        return count


def release(sim: Upstream, spec: str) -> None:
    """Let a loopback simulator's requests of ``spec`` held by ``hold`` or ``hold_after`` go on."""
    url = f"{sim.base_url}/_release?spec={urllib.parse.quote(spec)}"
    with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=10):
        pass


def until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``check`` until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def record_catalogue_searches(monkeypatch: Any, cache_dir: str) -> list[list[tuple[str, str]]]:
    """Every genai-prices catalogue search, made in this process (no fork) and finding
    nothing, into ``cache_dir``; returns the list each search's wanted pairs are added to."""
    from laneway.accounting import pricer as pricer_module
    from laneway.accounting.price_cache import CACHE_DIR_ENV

    searches: list[list[tuple[str, str]]] = []

    def search(wanted: list[tuple[str, str]]) -> list[None]:
        searches.append(list(wanted))
        return [None] * len(wanted)

    monkeypatch.setenv(CACHE_DIR_ENV, cache_dir)
    monkeypatch.setattr(pricer_module, "_search_catalogue", search)
    monkeypatch.setattr(pricer_module, "can_fork", lambda: False)
    return searches
