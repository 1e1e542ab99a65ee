"""Which price a source gets: its own, else the catalogue by URL, model id, or vendor/model."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from laneway.accounting import Pricer
from laneway.accounting.pricer import catalogue_prices
from laneway.config.models import LanewayConfig
from laneway.core.records import CallRecord
from laneway.core.types import Attempt, Usage
from tests.helpers import record_catalogue_searches

WHEN = 1_750_000_000.0


def pricer(model: str, base_url: str = "http://127.0.0.1:1/v1", **source) -> Pricer:
    body = {"base_url": base_url, "model": model, **source}
    config = LanewayConfig.model_validate({"lanes": {"l": {"sources": [body]}}})
    return Pricer.for_lanes(config.lanes)


def origin(p: Pricer) -> str | None:
    (source,) = [s for (_, s) in p.entries]
    rate = p.rate("l", source, WHEN)
    return None if rate is None else rate.origin


@pytest.mark.parametrize(
    ("model", "base_url", "expected"),
    [
        ("gpt-4o", "http://127.0.0.1:1/v1", "genai-prices openai/gpt-4o"),
        ("openai/gpt-4o", "http://127.0.0.1:1/v1", "genai-prices openai/gpt-4o"),
        (
            "anthropic/claude-3.5-sonnet",
            "https://openrouter.ai/api/v1",
            "genai-prices openrouter/anthropic/claude-3.5-sonnet",
        ),
        ("sim-model", "http://127.0.0.1:1/v1", None),
    ],
)
def test_catalogue_lookup(model: str, base_url: str, expected: str | None) -> None:
    assert origin(pricer(model, base_url)) == expected


def test_own_price_wins_over_the_catalogue() -> None:
    p = pricer("gpt-4o", price={"input": 1, "output": 2})
    assert origin(p) == "price override"


def record(source: str | None, usage: Usage, lane: str = "l") -> CallRecord:
    return CallRecord(WHEN, lane, "chat", "ok", 0.1, (), source=source, usage=usage)


def test_cost_of_a_record() -> None:
    p = pricer("sim-model", price={"input": 1, "output": 2}, name="s")
    known = Usage(1_000_000, 1_000_000, 2_000_000, source="provider")
    assert p.cost(record("s", known)) == (3.0, "priced")
    assert p.cost(record("s", Usage())) == (None, "usage_unknown")
    assert p.cost(record(None, known)) == (None, "unpriced")
    assert p.cost(record("s", known, lane="gone")) == (None, "unpriced")


def test_a_record_is_priced_once_for_all_its_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorder, metrics, access log and telemetry writer each ask; one answer serves all."""
    p = pricer("sim-model", price={"input": 1, "output": 2}, name="s")
    calls = []
    answer_cost = p.answer_cost

    def counted(*args: object) -> object:
        calls.append(args)
        return answer_cost(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(p, "answer_cost", counted)
    r = record("s", Usage(1_000_000, 1_000_000, 2_000_000, source="provider"))
    assert [p.cost(r) for _ in range(4)] == [(3.0, "priced")] * 4
    assert len(calls) == 1


def test_unpriced_source_costs_nothing_known() -> None:
    p = pricer("sim-model", name="s")
    assert p.cost(record("s", Usage(1, 1, 2, source="provider"))) == (None, "unpriced")


def test_response_cache_hit_costs_zero_by_its_own_status() -> None:
    p = pricer("sim-model", price={"input": 1, "output": 2}, name="s")
    known = Usage(1_000_000, 1_000_000, 2_000_000, source="provider")
    hit = CallRecord(WHEN, "l", "chat", "ok", 0.001, (), source="s", usage=known, cache="hit")
    assert p.cost(hit) == (0.0, "cache_hit")


def test_ocr_calls_are_priced_like_chat() -> None:
    p = pricer("sim-model", price={"input": 1, "output": 2}, name="s")
    ocr = CallRecord(
        WHEN,
        "l",
        "ocr",
        "ok",
        0.1,
        (),
        source="s",
        usage=Usage(1_000_000, None, None, source="provider"),
    )
    assert p.cost(ocr) == (None, "usage_unknown")


DRIVER = """
import json, os, sys, threading
from laneway.accounting import Pricer
from laneway.accounting.price_cache import CACHE_DIR_ENV
from laneway.config.models import LanewayConfig
sources = [{"base_url": "http://127.0.0.1:1/v1", "model": m} for m in ("gpt-4o", "sim-model")]
lanes = LanewayConfig.model_validate({"lanes": {"l": {"sources": sources}}}).lanes

def search(name, cache_dir, other_thread):
    os.environ[CACHE_DIR_ENV] = cache_dir
    if other_thread:
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    entries = Pricer.for_lanes(lanes).entries.values()
    found = [None if e is None else e.rate(1.75e9).origin for e in entries]
    sys.stdout.write(json.dumps([name, found, "genai_prices.data" in sys.modules]) + "\\n")
    sys.stdout.flush()

def forked(*args):
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            search(*args)
            status = 0
        finally:
            os._exit(status)
    return pid

for searches in json.loads(sys.argv[1]):
    for pid in [forked(*args) for args in searches]:
        assert os.waitpid(pid, 0)[1] == 0, "a search failed"
"""
"""Runs the searches of ``argv[1]`` (rounds of ``[name, cache_dir, other_thread]``), a round
at a time, each in a child forked from one interpreter that has imported what a search
imports first and nothing else, and runs no other thread: each child starts as a fresh
interpreter would reach the search, so the interpreter's start-up is paid once. Prints
``[name, origins found, catalogue loaded]`` a line per search."""

FOUND = ["genai-prices openai/gpt-4o", None]


@dataclass(frozen=True)
class Search:
    """What one search in a fresh process found, and whether the catalogue was loaded there."""

    found: list[str | None]
    catalogue_loaded: bool


@pytest.fixture(scope="module")
def searches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Search]:
    """First start, restart from its cache file, and a start with another thread running.

    The restart reads the first start's file, so it runs after it, in its folder; the
    start with a thread runs beside the first, in a folder of its own.
    """
    started, fresh = tmp_path_factory.mktemp("started"), tmp_path_factory.mktemp("fresh")
    first, thread = ("first", str(started), False), ("thread", str(fresh), True)
    plan = [[first, thread], [("restart", str(started), True)]]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(plan)], capture_output=True, text=True, check=True
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(name for name, _, _ in answers) == ["first", "restart", "thread"]
    return {name: Search(found, loaded) for name, found, loaded in answers}


def test_the_catalogue_is_searched_in_a_child_and_not_kept(searches: dict[str, Search]) -> None:
    assert searches["first"] == Search(FOUND, catalogue_loaded=False)


def test_with_another_thread_running_the_catalogue_is_searched_here(
    searches: dict[str, Search],
) -> None:
    assert searches["thread"] == Search(FOUND, catalogue_loaded=True)


def test_a_restart_answers_from_the_cache_file_without_the_catalogue(
    searches: dict[str, Search],
) -> None:
    """With another thread running, only the file can answer without loading the catalogue."""
    assert searches["restart"] == Search(FOUND, catalogue_loaded=False)


WANTED = [("gpt-4o", "http://127.0.0.1:1/v1")]


def test_an_unsafe_or_broken_cache_file_is_searched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file others may write, or that does not unpickle, is not read: the catalogue is."""
    searched = record_catalogue_searches(monkeypatch, str(tmp_path))
    catalogue_prices(WANTED)
    catalogue_prices(WANTED)
    assert searched == [WANTED], "the second start answered from the file"
    (stored,) = tmp_path.glob("prices-*.pickle")
    stored.chmod(0o666)
    catalogue_prices(WANTED)
    assert searched == [WANTED] * 2
    stored.chmod(0o600)
    stored.write_bytes(b"not a pickle")
    catalogue_prices(WANTED)
    assert searched == [WANTED] * 3


def failed(*outcomes: str) -> CallRecord:
    attempts = tuple(Attempt("s", o, 0.1, int(o) if o.isdigit() else None) for o in outcomes)
    return CallRecord(WHEN, "l", "chat", "error", 0.3, attempts, source="s", error="e")


def test_a_failed_call_no_upstream_answered_billed_nothing_known() -> None:
    """Issue 23 defect 14: it read as usage unknown (a key's spend then showed >= $...)."""
    p = pricer("sim-model", price={"input": 1, "output": 2}, name="s")
    assert p.cost(failed("500", "connect", "429")) == (0.0, "not_billed")
    assert p.cost(failed()) == (0.0, "not_billed")
    for maybe_billed in ("timeout", "cut", "deadline", "malformed"):
        assert p.cost(failed("500", maybe_billed)) == (None, "usage_unknown"), maybe_billed
