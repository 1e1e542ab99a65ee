"""Which price a source gets: its own, else the catalogue by URL, model id, or vendor/model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from laneway.accounting import Pricer
from laneway.accounting.price_cache import CACHE_DIR_ENV
from laneway.config.models import LanewayConfig
from laneway.core.records import CallRecord
from laneway.core.types import Usage

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


SEARCH = """
import sys, threading
from laneway.accounting import Pricer
from laneway.config.models import LanewayConfig
sources = [{"base_url": "http://127.0.0.1:1/v1", "model": m} for m in ("gpt-4o", "sim-model")]
lanes = LanewayConfig.model_validate({"lanes": {"l": {"sources": sources}}}).lanes
%s
entries = Pricer.for_lanes(lanes).entries.values()
print([None if e is None else e.rate(1.75e9).origin for e in entries])
print("genai_prices.data" in sys.modules)
"""


THREAD = "threading.Thread(target=threading.Event().wait, daemon=True).start()"


def in_fresh_interpreter(code: str, cache_dir: Path) -> list[str]:
    """``code``'s output lines, run where nothing is imported and no other thread runs."""
    env = {**os.environ, CACHE_DIR_ENV: str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.splitlines()


def test_the_catalogue_is_searched_in_a_child_and_not_kept(tmp_path: Path) -> None:
    found, catalogue_loaded = in_fresh_interpreter(SEARCH % "", tmp_path)
    assert found == "['genai-prices openai/gpt-4o', None]"
    assert catalogue_loaded == "False"


def test_with_another_thread_running_the_catalogue_is_searched_here(tmp_path: Path) -> None:
    found, catalogue_loaded = in_fresh_interpreter(SEARCH % THREAD, tmp_path)
    assert found == "['genai-prices openai/gpt-4o', None]"
    assert catalogue_loaded == "True"


def test_a_restart_answers_from_the_cache_file_without_the_catalogue(tmp_path: Path) -> None:
    in_fresh_interpreter(SEARCH % "", tmp_path)
    found, catalogue_loaded = in_fresh_interpreter(SEARCH % THREAD, tmp_path)
    assert found == "['genai-prices openai/gpt-4o', None]"
    assert catalogue_loaded == "False"


def test_an_unsafe_or_broken_cache_file_is_searched_again(tmp_path: Path) -> None:
    in_fresh_interpreter(SEARCH % "", tmp_path)
    (stored,) = tmp_path.glob("prices-*.pickle")
    stored.chmod(0o666)
    assert in_fresh_interpreter(SEARCH % THREAD, tmp_path)[1] == "True"
    stored.chmod(0o600)
    stored.write_bytes(b"not a pickle")
    assert in_fresh_interpreter(SEARCH % THREAD, tmp_path)[1] == "True"
