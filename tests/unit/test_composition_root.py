"""Only ``laneway.app`` makes what a call is recorded, limited, priced and sent through.

The composition root (``docs/architecture.md``, "Wiring") is the one place a
source store, a cache, a transport, a pricer, the metrics, a key ledger or a
telemetry writer is made; everything else is handed one. This walks every
module of ``src/laneway`` and fails on a call of one of their constructors or
factories anywhere else, except inside the package that defines it (its own
factory: ``open_store`` makes a ``MemoryStore``).
"""

from __future__ import annotations

from tests.unit.sources import package_modules, summarize

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
        f"{module.dotted}:{line} {name}()"
        for module in package_modules()
        for name, line in module.calls
        if name in MADE_ONLY_IN_APP
        and not _inside(module.dotted, ROOT)
        and not _inside(module.dotted, MADE_ONLY_IN_APP[name])
    ]
    assert not made, f"made outside laneway.app (hand it in from there instead): {made}"


def test_every_listed_constructor_is_defined_in_its_package() -> None:
    defined = {
        (definition.split(" ", 1)[1].rsplit(".", 1)[-1], module.dotted)
        for module in package_modules()
        for definition, _ in module.sizes
    }
    missing = [
        name
        for name, home in MADE_ONLY_IN_APP.items()
        if not any(n == name and _inside(module, home) for n, module in defined)
    ]
    assert not missing, f"renamed or moved: update MADE_ONLY_IN_APP: {missing}"


def test_the_walk_finds_calls_by_name_and_by_attribute() -> None:
    text = "x = Metrics()\ny = accounting.Pricer.for_lanes(lanes)\nMetricsLike()\n"
    calls = summarize(("laneway", "m"), text).calls
    assert [call for call in calls if call[0] in MADE_ONLY_IN_APP] == [
        ("Metrics", 1),
        ("for_lanes", 2),
    ]


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")
