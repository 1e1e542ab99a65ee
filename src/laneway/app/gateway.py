"""The gateway over a built engine: its key limits (ledger and pricer) made here, then ``Gateway``.

``laneway serve`` builds its gateways through ``Composer`` (``app.composer``),
which hands in the process's pricer and the ledger a reload keeps; a gateway
built over an engine alone (tests, ``laneway simulate``'s fault gateway) gets
its key limits here too, so no one but ``laneway.app`` opens a key ledger or
resolves prices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from laneway.accounting.pricer import Pricer
from laneway.app.pricing import pricer_for
from laneway.config.models import LanewayConfig
from laneway.core.clock import TimeSource
from laneway.engine.gateway import Engine
from laneway.metrics import Metrics
from laneway.server.app import Gateway
from laneway.server.health import ConfigId
from laneway.server.limit_refusals import budgeted
from laneway.server.limits import KeyLimits, limits_keys, stores_keys
from laneway.state.keys import open_key_ledger
from laneway.state.keys.ledger import KeyLedger

if TYPE_CHECKING:
    from laneway.server.admin import AdminApi
    from laneway.server.context import CallsInFlight
    from laneway.server.stored_keys import StoredKeys
    from laneway.telemetry import TelemetryWriter


def key_limits(
    config: LanewayConfig,
    clock: TimeSource,
    *,
    pricer: Pricer | None = None,
    ledger: KeyLedger | None = None,
    environ: Mapping[str, str] | None = None,
) -> KeyLimits | None:
    """The limits of the config's keys; ``None`` when no key has any and there is no key
    store (whose keys may have limits).

    The figures go to ``ledger``, by default the state store of ``state.url``.
    Prices are resolved here (``pricer_for``) when a key has a budget and no
    ``pricer`` was given. With ``environ`` (the serving process's), budget
    alerts are sent as ``server.alerts`` says.
    """
    if not limits_keys(config):
        return None
    limited = [key for key in config.server.keys if key.limited]
    if pricer is None and (stores_keys(config) or any(budgeted(key) for key in limited)):
        pricer = pricer_for(config)
    if ledger is None:
        state = config.state
        ledger = open_key_ledger(
            state.url, clock, fallback_share=state.fallback_share, timeout=state.timeout
        )
    lanes = {name: (lane.kind, lane.source_names()) for name, lane in config.lanes.items()}
    chains = {name: config.fallback_chain(name) for name in config.lanes}
    alerts = None
    if environ is not None:
        from laneway.server.budget_alerts import budget_alerts

        alerts = budget_alerts(config, environ, ledger, clock)
    return KeyLimits(limited, lanes, ledger, clock, pricer, chains, alerts)


def gateway_over(
    config: LanewayConfig,
    engine: Engine,
    environ: Mapping[str, str],
    *,
    metrics: Metrics | None = None,
    telemetry: TelemetryWriter | None = None,
    limits: KeyLimits | None = None,
    config_id: ConfigId | None = None,
    calls: CallsInFlight | None = None,
    stored: StoredKeys | None = None,
    admin: AdminApi | None = None,
) -> Gateway:
    """The gateway of ``config`` over ``engine`` (built from it), with the key limits it needs
    (``key_limits``) unless ``limits`` are handed in; the other arguments are ``Gateway``'s."""
    if limits is None:
        limits = key_limits(config, engine.clock)
    return Gateway(
        config,
        engine,
        environ,
        metrics=metrics,
        telemetry=telemetry,
        limits=limits,
        config_id=config_id,
        calls=calls,
        stored=stored,
        admin=admin,
    )
