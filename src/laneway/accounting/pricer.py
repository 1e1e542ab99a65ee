"""Which price applies to each source of each lane, resolved once at start-up.

A source's ``price:`` block wins. Otherwise the genai-prices catalogue is
asked, because ``provider: openai`` names a wire format, not a vendor: first
the vendor whose API URL matches ``base_url``, then the model id as given,
then an OpenRouter-style ``vendor/model`` id split at its first ``/``.
``laneway check`` shows which entry each source got, so a guess is visible.

The catalogue is searched in a forked child where that is safe
(``laneway.accounting.forked``), which sends back only the entries found.
Searched in the gateway, it cost ~5 MiB resident for good (genai-prices'
import and its data set); dropping the data after the search still left
~2.5 MiB (measured on ``laneway serve`` after load). Its answers are kept on
disk (``laneway.accounting.price_cache``): a restart searches only new sources.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from laneway.accounting import price_cache
from laneway.accounting.cost import (
    CACHE_HIT,
    NOT_BILLED,
    USAGE_UNKNOWN,
    Cost,
    billed_nothing,
    cost_of,
    total_cost,
)
from laneway.accounting.forked import can_fork, run_forked
from laneway.accounting.rates import Rate, catalogue_rate, override_rate
from laneway.core.records import CallRecord
from laneway.core.types import Attempt, Usage

if TYPE_CHECKING:
    from genai_prices import Usage as CatalogueUsage
    from genai_prices.types import ModelInfo


class PriceSpec(Protocol):
    """A ``price:`` block (``laneway.config.PriceConfig`` has this shape)."""

    @property
    def input(self) -> float: ...
    @property
    def output(self) -> float | None: ...
    @property
    def cached_input(self) -> float | None: ...
    @property
    def cache_write_input(self) -> float | None: ...


class PricedSource(Protocol):
    """A lane's source as far as pricing cares (``SourceConfig`` has this shape)."""

    @property
    def base_url(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def price(self) -> PriceSpec | None: ...


class LaneSpec(Protocol):
    """A lane as far as pricing cares (``LaneConfig`` has this shape)."""

    @property
    def kind(self) -> str: ...
    @property
    def sources(self) -> Sequence[PricedSource]: ...
    def source_names(self) -> list[str]: ...


@dataclass(slots=True)
class CataloguePrice:
    """A genai-prices model; its price may depend on the call's date or time of day."""

    model: ModelInfo
    origin: str
    _rates: dict[int, Rate | None] = field(default_factory=dict)

    def rate(self, when: float) -> Rate | None:
        """The rate in force at Unix time ``when``."""
        from genai_prices.types import ModelPrice

        prices = self.model.prices
        if not isinstance(prices, ModelPrice):
            prices = self.model.get_prices(datetime.fromtimestamp(when, UTC))
        key = id(prices)  # catalogue objects live as long as the process: stable keys
        if key not in self._rates:
            self._rates[key] = catalogue_rate(prices, self.origin)
        return self._rates[key]


@dataclass(frozen=True, slots=True)
class FixedPrice:
    """A source's own ``price:`` block."""

    fixed: Rate

    def rate(self, when: float) -> Rate | None:
        """The same rate at any time."""
        return self.fixed


PriceEntry = CataloguePrice | FixedPrice


class Pricer:
    """The price of every (lane, source); prices a ``CallRecord`` in a few µs."""

    def __init__(self, entries: Mapping[tuple[str, str], PriceEntry | None]) -> None:
        self.entries = dict(entries)
        self._catalogue: dict[tuple[str, str], CataloguePrice | None] = {}
        """Catalogue answers by ``(model, base_url)``, so a reload searches only new ones."""

    @classmethod
    def for_lanes(cls, lanes: Mapping[str, LaneSpec]) -> Pricer:
        """Resolve every source of ``lanes`` (pass ``config.lanes``)."""
        pricer = cls({})
        pricer.update(lanes)
        return pricer

    def update(self, lanes: Mapping[str, LaneSpec]) -> None:
        """Price every source of ``lanes`` (a reloaded config), in place.

        Metrics, telemetry and key budgets hold this one pricer, so they price
        the new lanes from now on. The catalogue is searched only for a
        ``(model, base_url)`` not searched before. Entries of lanes no longer
        configured stay: calls still running on the old config end after this.
        """
        sources = {
            (lane_name, name): source
            for lane_name, lane in lanes.items()
            for name, source in zip(lane.source_names(), lane.sources, strict=True)
        }
        entries: dict[tuple[str, str], PriceEntry | None] = {
            key: own_price(source) for key, source in sources.items()
        }
        unpriced = [key for key, entry in entries.items() if entry is None]
        wanted = list(dict.fromkeys((sources[k].model, sources[k].base_url) for k in unpriced))
        searched = [w for w in wanted if w not in self._catalogue]
        self._catalogue.update(zip(searched, catalogue_prices(searched), strict=True))
        entries.update(
            (k, self._catalogue[sources[k].model, sources[k].base_url]) for k in unpriced
        )
        self.entries.update(entries)

    def rate(self, lane: str, source: str | None, when: float) -> Rate | None:
        """The rate of ``source`` on ``lane`` at ``when``; ``None`` when unpriced.

        A source of another lane of the call's fallback chain is named
        ``other/source`` in its attempts: it is priced on that lane.
        """
        if source is None:
            return None
        entry = self.entries.get((lane, source))
        if entry is None and "/" in source:
            other, _, own = source.partition("/")
            entry = self.entries.get((other, own))
        return None if entry is None else entry.rate(when)

    def cost(self, record: CallRecord) -> Cost:
        """What the recorded call cost, or why that is unknown.

        A response-cache hit cost nothing upstream: it is zero, by its own status;
        so is a failed call no upstream answered (``not_billed``, ``billed_nothing``).
        A call whose attempts carry their own usage (a stream continued on
        another source) costs the sum of each part at its source's rate.
        """
        known = record.priced
        if isinstance(known, Cost):
            return known
        if record.cache == "hit":
            cost = CACHE_HIT
        elif (
            record.outcome == "error" and not record.usage.known and billed_nothing(record.attempts)
        ):
            cost = NOT_BILLED
        else:
            cost = self.answer_cost(
                record.lane, record.kind, record.time, record.attempts, record.usage, record.source
            )
        record.priced = cost  # every reader of this record asks; price it once
        return cost

    def answer_cost(
        self,
        lane: str,
        kind: str,
        when: float,
        attempts: Sequence[Attempt],
        usage: Usage,
        source: str | None,
    ) -> Cost:
        """What an answer cost: its attempts' own usage when they carry it, else ``usage``."""
        for attempt in attempts:  # a loop, not a list: almost no answer has such attempts
            if attempt.usage is not None:
                parts = [(a.source, a.usage) for a in attempts if a.usage is not None]
                return total_cost(cost_of(u, self.rate(lane, s, when), kind) for s, u in parts)
        if not usage.known:
            return USAGE_UNKNOWN
        return cost_of(usage, self.rate(lane, source, when), kind)


def _unanswered(record: CallRecord) -> bool:
    """A failed call with no usage that no upstream could have billed (``billed_nothing``)."""
    return record.outcome == "error" and not record.usage.known and billed_nothing(record.attempts)


def own_price(source: PricedSource) -> FixedPrice | None:
    """The source's own ``price:`` block; ``None`` when it has none."""
    own = source.price
    if own is None:
        return None
    return FixedPrice(override_rate(own.input, own.output, own.cached_input, own.cache_write_input))


def catalogue_prices(wanted: Sequence[tuple[str, str]]) -> list[CataloguePrice | None]:
    """The catalogue entry of each ``(model, base_url)``; ``None`` where none matches.

    Nothing is loaded when nothing is wanted. Answers of earlier runs come from
    the cache file (``price_cache``); the rest are searched in a forked child
    when ``can_fork()``, here otherwise (the catalogue then stays loaded), and
    added to the file.
    """
    if not wanted:
        return []
    path = price_cache.cache_file()
    answers = price_cache.load(path) if path is not None else {}
    missing = [w for w in wanted if w not in answers]
    if missing:
        found = (
            run_forked(lambda: _search_catalogue(missing))
            if can_fork()
            else _search_catalogue(missing)
        )
        answers.update(zip(missing, found, strict=True))
        if path is not None:
            price_cache.store(path, answers)
    return [_price(answers[w]) for w in wanted]


def _price(found: price_cache.Found) -> CataloguePrice | None:
    """A fresh ``CataloguePrice`` (its rates memo is keyed by object ids of this process)."""
    return None if found is None else CataloguePrice(*found)


def _search_catalogue(wanted: Sequence[tuple[str, str]]) -> list[price_cache.Found]:
    from genai_prices import Usage as CatalogueUsage

    probe = CatalogueUsage(input_tokens=1)
    return [_catalogue_entry(model, base_url, probe) for model, base_url in wanted]


def _catalogue_entry(model: str, base_url: str, probe: CatalogueUsage) -> price_cache.Found:
    from genai_prices import calc_price

    for vendor, url, ref in _catalogue_keys(model, base_url):
        try:
            found = (
                calc_price(probe, ref, provider_api_url=url)
                if url is not None
                else calc_price(probe, ref, provider_id=vendor)
            )
        except LookupError:
            continue
        return found.model, f"genai-prices {found.provider.id}/{found.model.id}"
    return None


def _catalogue_keys(model: str, base_url: str) -> Iterator[tuple[str | None, str | None, str]]:
    """(vendor, API URL, model ref) to try, most specific first."""
    yield None, base_url, model
    yield None, None, model
    vendor, slash, rest = model.partition("/")
    if slash and rest:
        yield vendor, None, rest
