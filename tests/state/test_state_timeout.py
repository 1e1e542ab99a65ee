"""``state.timeout``: the one bound of every Redis call, read from the config and obeyed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from laneway.clocks import SystemClock
from laneway.config.models import LanewayConfig, StateConfig
from laneway.state import open_store
from laneway.state.admission.fallback import FallbackStore
from laneway.state.keys import open_key_ledger
from laneway.state.keys.fallback import FallbackKeyLedger
from tests.state.conftest import REDIS_URL


def test_the_default_is_half_a_second_and_durations_are_read() -> None:
    assert StateConfig(url=REDIS_URL).timeout == 0.5
    assert StateConfig.model_validate({"url": REDIS_URL, "timeout": "2s"}).timeout == 2.0


@pytest.mark.parametrize("bad", ["0s", "-1s", "31s"])
def test_a_timeout_out_of_bounds_is_refused_naming_the_field(bad: str) -> None:
    with pytest.raises(ValidationError, match="timeout"):
        LanewayConfig.model_validate({"state": {"url": REDIS_URL, "timeout": bad}})


def test_a_timeout_without_a_shared_store_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"timeout applies to a shared state\.url only"):
        StateConfig.model_validate({"timeout": "2s"})


def test_the_store_and_the_key_ledger_obey_it() -> None:
    clock = SystemClock()
    store = open_store(REDIS_URL, clock, timeout=3.0)
    ledger = open_key_ledger(REDIS_URL, clock, timeout=3.0)
    assert isinstance(store, FallbackStore) and isinstance(ledger, FallbackKeyLedger)
    for guard, client in ((store, store.shared.client), (ledger, ledger.shared.client)):
        assert guard.timeout == 3.0
        options = client.connection_pool.connection_kwargs
        assert options["socket_timeout"] == options["socket_connect_timeout"] == 3.0
