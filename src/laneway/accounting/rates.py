"""Per-million-token rates, from a ``price:`` override or the genai-prices catalogue.

The catalogue is read once per source at start-up and turned into plain
floats, so pricing a call is a few multiplications: cheap enough for the
metrics observer on the request path (genai-prices' own ``calc_price`` takes
~150 µs a call). ``tests/accounting`` checks the arithmetic against
``calc_price`` for every catalogue model.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice


PER_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Tiered:
    """USD per million tokens; past a tier's prompt-size threshold, the tier's price.

    Tiers are cliffs, as in genai-prices: once the prompt exceeds ``start``,
    every token of that kind is charged the tier's price.
    """

    base: float
    tiers: tuple[tuple[int, float], ...] = ()

    def at(self, prompt_tokens: int) -> float:
        """The price per million that applies to a call with this prompt size."""
        for start, price in reversed(self.tiers):
            if prompt_tokens > start:
                return price
        return self.base


@dataclass(frozen=True, slots=True)
class Rate:
    """What one source charges for the token kinds an OpenAI-shaped usage reports.

    ``output`` is ``None`` for embedding models (no output price); a call that
    nevertheless produced completion tokens is then unpriced. ``cached_input``
    and ``reasoning`` fall back to ``input`` and ``output``: reasoning tokens
    are part of completion tokens, only priced apart where the catalogue says so.
    ``cache_write`` (prompt-cache writes, e.g. Anthropic's 1.25x input) falls
    back to ``input``.
    """

    input: Tiered
    output: Tiered | None = None
    cached_input: Tiered | None = None
    reasoning: Tiered | None = None
    cache_write: Tiered | None = None
    per_request: float | None = None
    origin: str = ""


def override_rate(
    input: float,
    output: float | None,
    cached_input: float | None,
    cache_write_input: float | None = None,
) -> Rate:
    """The rate of a source's own ``price:`` block."""
    return Rate(
        input=Tiered(input),
        output=None if output is None else Tiered(output),
        cached_input=None if cached_input is None else Tiered(cached_input),
        cache_write=None if cache_write_input is None else Tiered(cache_write_input),
        origin="price override",
    )


def catalogue_rate(price: ModelPrice, origin: str) -> Rate | None:
    """A genai-prices ``ModelPrice`` as a ``Rate``; ``None`` without a text input price.

    Keys no usage of ours reports (audio, images, web searches) are left out:
    no call of ours could be charged for them.
    """
    found = _tiered(price.input_mtok)
    if found is None:
        return None
    return Rate(
        input=found,
        output=_tiered(price.output_mtok),
        cached_input=_tiered(price.cache_read_mtok),
        reasoning=_tiered(price.output_reasoning_mtok),
        cache_write=_tiered(price.cache_write_mtok),
        per_request=_per_request(price.requests_kcount),
        origin=origin,
    )


def _tiered(value: Any) -> Tiered | None:
    from genai_prices.types import TieredPrices

    if isinstance(value, Decimal):
        return Tiered(float(value))
    if isinstance(value, TieredPrices):
        tiers = tuple((tier.start, float(tier.price)) for tier in value.tiers)
        return Tiered(float(value.base), tiers)
    return None


def _per_request(per_thousand: Any) -> float | None:
    """USD per call from a price per thousand requests (flat in every catalogue entry)."""
    return float(per_thousand) / 1000 if isinstance(per_thousand, Decimal) else None
