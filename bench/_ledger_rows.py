"""The cost ledger's rows: the baseline ``laneway serve`` and each feature's config mutation.

Adding a feature to the ledger (``bench/cost_ledger.py``) is one entry in ``FEATURES``:
what it turns on, the mutation of the baseline that does it, and the row its price is
measured against (empty: the baseline).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _gateway_setup as setup

LANE = f"cost-ledger-{os.getpid()}"
"""A lane name of this run only: Redis state keys it writes are its own."""


@dataclass
class Server:
    """What one row starts: the config, the environment and the serve arguments."""

    config: dict[str, Any]
    env: dict[str, str]
    args: list[str]
    scratch: Path
    traces: str
    """The URL of a collector that takes OTLP traces (answers 200)."""


Mutation = Callable[[Server], None]


def _key_limits(s: Server) -> None:
    key = {"name": "bench", "key": setup.BENCH_KEY, "rpm": setup.KEY_RPM}
    s.config["server"]["keys"] = [key]


def _telemetry(s: Server) -> None:
    s.config["telemetry"] = {"url": f"sqlite:///{s.scratch / 'telemetry.sqlite3'}"}


def _access_log(s: Server) -> None:
    s.args[s.args.index("--log-level") + 1] = "info"


def _metrics(s: Server) -> None:
    s.config["server"]["metrics"] = True


def _traces(s: Server) -> None:
    s.env["OTEL_TRACES_EXPORTER"] = "otlp"
    s.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = s.traces


def _redaction(s: Server) -> None:
    s.config["lanes"][LANE]["sources"][0]["api_key"] = "sk-cost-ledger-secret-0123456789"


def _redis_state(s: Server) -> None:
    s.config["state"] = {"url": "redis://127.0.0.1:6379/0"}


def _keyed_redis_state(s: Server) -> None:
    _key_limits(s)
    _redis_state(s)


def _response_cache(s: Server) -> None:
    s.config["cache"] = {"url": ":memory:"}
    s.config["lanes"][LANE]["cache"] = {"ttl": "1h"}


def _two_sources(s: Server) -> None:
    lane = s.config["lanes"][LANE]
    lane["sources"].append({**copy.deepcopy(lane["sources"][0]), "priority": 1})


def _unused_hedge(s: Server) -> None:
    _two_sources(s)
    s.config["lanes"][LANE]["hedge"] = {"after": "20s"}


def _stored_keys(s: Server) -> None:
    _key_limits(s)
    s.config["server"]["key_store"] = f"sqlite:///{s.scratch / 'keys.sqlite3'}"
    s.config["server"]["admin_keys"] = [{"name": "ops", "key": "sk-cost-ledger-admin-0123"}]


FEATURES: dict[str, tuple[str, Mutation, str]] = {
    "metrics": ("`server.metrics: true` (the default): /metrics and the status page", _metrics, ""),
    "key limits": ("a server key with an rpm, checked every call", _key_limits, ""),
    "telemetry": ("telemetry to a SQLite file", _telemetry, ""),
    "access log": ("`--log-level info`: one JSON access-log line a call", _access_log, ""),
    "traces": ("OTLP traces to a local collector (answers 200)", _traces, ""),
    "redaction": ("a literal source api_key, redacted from logs and errors", _redaction, ""),
    "Redis state": ("`state: {url: redis://127.0.0.1:6379/0}`", _redis_state, ""),
    "Redis state, keyed": (
        "Redis state beside a key with an rpm (its window in Redis too)",
        _keyed_redis_state,
        "key limits",
    ),
    "response cache": (
        "`cache: {ttl: 1h}` on `:memory:` (all but the first call hit)",
        _response_cache,
        "",
    ),
    "two sources": ("a second source of lower priority (never reached)", _two_sources, ""),
    "hedge (unused)": (
        "`hedge: {after: 20s}` on the two sources, never reached",
        _unused_hedge,
        "two sources",
    ),
    "stored-key lookup": (
        "a key store (`server.key_store`) beside the key",
        _stored_keys,
        "key limits",
    ),
}
"""Each feature: what it turns on, the mutation of the baseline that does it, and the row
its price is measured against (empty: the baseline)."""


def baseline(upstream: str, scratch: Path, traces: str) -> Server:
    """One lane on nginx and nothing else on (no metrics, no telemetry, no access log).

    Its source has a ``price:`` block, so no run searches the price catalogue (a search
    forks a child, and only the first run of a model does it: the runs would differ).
    """
    source: dict[str, Any] = {
        "provider": "openai",
        "base_url": f"{upstream}/v1",
        "model": setup.UPSTREAM_MODEL,
        "price": {"input": 1.0, "output": 2.0},  # every call priced, no catalogue search
    }
    config: dict[str, Any] = {
        "lanes": {LANE: {"kind": "chat", "deadline": "30s", "sources": [source]}},
        "server": {"host": "127.0.0.1", "metrics": False},
        "telemetry": {"url": "none"},
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return Server(config, env, ["--log-level", "warning"], scratch, traces)
