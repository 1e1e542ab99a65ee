"""Cost statuses: unknown usage and missing prices are never $0."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import pytest
from genai_prices import Usage as CatalogueUsage
from genai_prices.data import providers
from genai_prices.types import ModelPrice

from laneway.accounting import Cost, Rate, Tiered, cost_of
from laneway.accounting.cost import total_cost
from laneway.accounting.rates import catalogue_rate, override_rate
from laneway.core.types import Usage

RATE = override_rate(input=2.0, output=8.0, cached_input=0.5)


def usage(prompt=1000, completion=500, reasoning=None, cached=None, source="provider") -> Usage:
    total = None if prompt is None or completion is None else prompt + completion
    return Usage(prompt, completion, total, reasoning, cached, source=source)


def test_unknown_usage_is_usage_unknown_even_with_a_price() -> None:
    assert cost_of(Usage(), RATE, "chat") == Cost(None, "usage_unknown")


def test_chat_without_completion_tokens_is_usage_unknown() -> None:
    assert cost_of(usage(completion=None), RATE, "chat") == Cost(None, "usage_unknown")


def test_unmapped_model_is_unpriced() -> None:
    assert cost_of(usage(), None, "chat") == Cost(None, "unpriced")


def test_override_price() -> None:
    assert cost_of(usage(), RATE, "chat") == Cost((1000 * 2 + 500 * 8) / 1e6, "priced")


def test_reasoning_is_attribution_not_an_extra_charge() -> None:
    assert cost_of(usage(reasoning=400), RATE, "chat") == cost_of(usage(), RATE, "chat")


def test_reasoning_priced_apart_only_where_the_rate_says() -> None:
    rate = Rate(input=Tiered(1.0), output=Tiered(10.0), reasoning=Tiered(3.0))
    cost = cost_of(usage(prompt=0, completion=500, reasoning=400), rate, "chat")
    assert cost.usd == pytest.approx((100 * 10 + 400 * 3) / 1e6)


def test_cached_input_at_the_cached_rate_else_at_input() -> None:
    cached = cost_of(usage(completion=0, cached=800), RATE, "chat")
    assert cached.usd == pytest.approx((200 * 2 + 800 * 0.5) / 1e6)
    no_cache_rate = override_rate(2.0, 8.0, None)
    assert cost_of(usage(completion=0, cached=800), no_cache_rate, "chat").usd == 2000 / 1e6


def test_embed_has_no_completion_tokens_and_no_output_price() -> None:
    rate = override_rate(0.2, None, None)
    assert cost_of(usage(completion=None), rate, "embed") == Cost(1000 * 0.2 / 1e6, "priced")


def test_completion_tokens_without_an_output_price_are_unpriced() -> None:
    assert cost_of(usage(), override_rate(0.2, None, None), "chat") == Cost(None, "unpriced")


def test_estimated_usage_gives_an_estimated_cost() -> None:
    assert cost_of(usage(source="estimated"), RATE, "chat").status == "estimated"


def test_tiers_are_cliffs_on_prompt_size() -> None:
    rate = Rate(input=Tiered(1.0, ((200_000, 2.0),)), output=Tiered(1.0))
    assert cost_of(usage(prompt=200_000, completion=0), rate, "chat").usd == pytest.approx(0.2)
    assert cost_of(usage(prompt=200_001, completion=0), rate, "chat").usd == pytest.approx(0.400002)


def catalogue_prices() -> list[tuple[str, ModelPrice]]:
    now = datetime.now(UTC)
    return [(f"{p.id}/{m.id}", m.get_prices(now)) for p in providers for m in p.models]


def checked_against_catalogue(figures: Usage, reported: CatalogueUsage, cache_writes: bool) -> int:
    """How many catalogue models laneway prices ``figures`` at exactly genai-prices' total."""
    checked = 0
    for name, price in catalogue_prices():
        rate = catalogue_rate(price, name)
        if rate is None or rate.output is None:
            continue
        if cache_writes and price.cache_write_mtok is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = float(price.calc_price(reported)["total_price"])
        assert cost_of(figures, rate, "chat").usd == pytest.approx(expected, rel=1e-9), name
        checked += 1
    return checked


def test_arithmetic_matches_genai_prices_for_every_catalogue_model() -> None:
    figures = usage(prompt=250_000, completion=3000, reasoning=1000, cached=100_000)
    reported = CatalogueUsage(
        input_tokens=250_000,
        cache_read_tokens=100_000,
        output_tokens=3000,
        output_reasoning_tokens=1000,
    )
    assert checked_against_catalogue(figures, reported, cache_writes=False) > 1000


def test_cache_writes_at_their_own_rate_else_at_input() -> None:
    written = Usage(1000, 0, 1000, None, 100, 600, source="provider")
    rate = override_rate(2.0, 8.0, 0.5, cache_write_input=2.5)
    assert cost_of(written, rate, "chat").usd == pytest.approx(
        (300 * 2 + 100 * 0.5 + 600 * 2.5) / 1e6
    )
    assert cost_of(written, RATE, "chat").usd == pytest.approx((900 * 2 + 100 * 0.5) / 1e6)


def test_cache_write_arithmetic_matches_genai_prices_for_every_catalogue_model() -> None:
    figures = Usage(250_000, 3000, 253_000, None, 100_000, 40_000, source="provider")
    reported = CatalogueUsage(
        input_tokens=250_000,
        cache_read_tokens=100_000,
        cache_write_tokens=40_000,
        output_tokens=3000,
    )
    assert checked_against_catalogue(figures, reported, cache_writes=True) > 50


def test_a_call_in_parts_costs_their_sum_and_is_only_as_known_as_they_are() -> None:
    priced, estimated = Cost(0.25, "priced"), Cost(0.5, "estimated")
    assert total_cost([priced, priced]) == Cost(0.5, "priced")
    assert total_cost([priced, estimated]) == Cost(0.75, "estimated")
    assert total_cost([priced, Cost(None, "unpriced")]) == Cost(None, "unpriced")
    unknown = [Cost(None, "unpriced"), Cost(None, "usage_unknown")]
    assert total_cost(unknown) == Cost(None, "usage_unknown")
