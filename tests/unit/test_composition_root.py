"""Only ``laneway.app`` makes what a call is recorded, limited, priced and sent through.

The composition root (``docs/architecture.md``, "Wiring") is the one place a
source store, a cache, a transport, a pricer, the metrics, a key ledger or a
telemetry writer is made; everything else is handed one. This walks every
module of ``src/laneway`` and fails on a call of one of their constructors or
factories anywhere else, except inside the package that defines it (its own
factory: ``open_store`` makes a ``MemoryStore``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "laneway.app"

MADE_ONLY_IN_APP: dict[str, str] = {
    "MemoryStore": "laneway.state",
    "RedisStore": "laneway.state",
    "FallbackStore": "laneway.state",
    "open_store": "laneway.state",
    "open_cache": "laneway.cache",
    "GuardedCache": "laneway.cache",
    "NoCache": "laneway.cache",
    "SqliteCacheStore": "laneway.cache",
    "RedisCacheStore": "laneway.cache",
    "AiohttpTransport": "laneway.http",
    "AsgiTransport": "laneway.http",
    "MockTransport": "laneway.http",
    "RedactingTransport": "laneway.engine.redaction",
    "Pricer": "laneway.accounting",
    "for_lanes": "laneway.accounting",
    "Metrics": "laneway.metrics",
    "MemoryKeyLedger": "laneway.state",
    "RedisKeyLedger": "laneway.state",
    "FallbackKeyLedger": "laneway.state",
    "open_key_ledger": "laneway.state",
    "TelemetryWriter": "laneway.telemetry",
    "writer_for": "laneway.telemetry",
}
"""Each constructor or factory (``Pricer.for_lanes`` by its method's name) and the package
that defines it, where it may also be called."""


def test_stores_caches_transports_pricers_metrics_and_ledgers_are_made_only_in_app() -> None:
    made = [
        f"{module}:{line} {name}()"
        for module, tree in _modules()
        for name, line in _calls(tree)
        if not _inside(module, ROOT) and not _inside(module, MADE_ONLY_IN_APP[name])
    ]
    assert not made, f"made outside laneway.app (hand it in from there instead): {made}"


def test_every_listed_constructor_is_defined_in_its_package() -> None:
    defined = {
        (node.name, module)
        for module, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    missing = [
        name
        for name, home in MADE_ONLY_IN_APP.items()
        if not any(n == name and _inside(module, home) for n, module in defined)
    ]
    assert not missing, f"renamed or moved: update MADE_ONLY_IN_APP: {missing}"


def test_the_walk_finds_calls_by_name_and_by_attribute() -> None:
    tree = ast.parse("x = Metrics()\ny = accounting.Pricer.for_lanes(lanes)\nMetricsLike()\n")
    assert list(_calls(tree)) == [("Metrics", 1), ("for_lanes", 2)]


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((SRC / "laneway").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield module, ast.parse(path.read_text())


def _calls(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Each call of a listed name in ``tree``: ``Name(...)`` or ``something.Name(...)``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in MADE_ONLY_IN_APP:
            yield name, node.lineno


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")
