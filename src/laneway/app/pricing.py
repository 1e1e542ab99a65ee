"""The pricer of a configuration's lanes, made here for every command that prices calls."""

from __future__ import annotations

from laneway.accounting.pricer import Pricer
from laneway.config.models import LanewayConfig


def pricer_for(config: LanewayConfig) -> Pricer:
    """The prices of ``config``'s lanes: their ``price:`` blocks, else the genai-prices
    catalogue, searched once, now (``Pricer.for_lanes``)."""
    return Pricer.for_lanes(config.lanes)
