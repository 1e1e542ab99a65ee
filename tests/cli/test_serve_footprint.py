"""What ``laneway serve`` loads: no optional part until a config asks for it (resident memory)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from laneway.cli import serve
from laneway.cli.main import PURE_FROZENLIST, main

OPTIONAL = (
    "sqlite3",  # SQLite telemetry and cache: imported when a store opens
    "genai_prices",  # the price catalogue: searched in a forked child
    "asyncpg",  # PostgreSQL telemetry
    "redis",  # shared state and the Redis cache
    "laneway.sim",  # --demo only
    "laneway.cli.demo",
    "laneway.client",  # the library facade
    "opentelemetry",  # traces: the [otel] extra, when OTEL_* variables ask for them
    "laneway.tracing.spans",
    "laneway.providers.anthropic",  # other wire formats: when a source names them
    "laneway.providers.gemini",
    "laneway.providers.azure",
    "laneway.wire.anthropic",  # their wire formats, read and written
    "laneway.wire.gemini",
    "laneway.wire.responses",
    "laneway.server.anthropic_messages",  # inbound dialects: at their first call
    "laneway.server.responses_api",
    "laneway.server.status_html",  # the status page: at its first view
    "laneway.serving.supervisor",  # --workers 2 and more
)


def imported_by(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    listing = [sys.executable, "-c", f"{code}; import sys; print(*sys.modules)"]
    done = subprocess.run(listing, capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_serve_imports_no_optional_part() -> None:
    loaded = imported_by("import laneway.cli.main, laneway.cli.serve")
    assert "laneway.cli.serve" in loaded
    assert sorted(m for m in loaded if any(m == o or m.startswith(f"{o}.") for o in OPTIONAL)) == []


def test_serve_asks_for_the_pure_python_frozenlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_FROZENLIST, "unset below; restored after the test")
    monkeypatch.delenv(PURE_FROZENLIST)
    monkeypatch.setattr(serve, "main", lambda argv: 0)
    assert main(["serve"]) == 0
    assert os.environ[PURE_FROZENLIST] == "1"


def test_a_frozenlist_choice_in_the_environment_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_FROZENLIST, "")
    monkeypatch.setattr(serve, "main", lambda argv: 0)
    assert main(["serve"]) == 0
    assert os.environ[PURE_FROZENLIST] == ""
