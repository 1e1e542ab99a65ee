"""Per-key limits and budgets, checked before a call and settled after it.

A key with ``rpm``, ``tpm``, ``max_concurrency`` or a ``budget`` reserves,
before the engine is called, one request, an estimate of its tokens, a slot
and an estimate of its cost (the dearest of the lane's priced sources at the
estimated size). When a limit would be passed the caller gets a ``429``
naming it, with ``Retry-After`` and ``X-RateLimit-*`` headers, and no
upstream sees the request. An answer to a key with ``rpm`` or ``tpm`` carries
``X-RateLimit-*`` too, made from what the reservation's round trip returned.
The call then settles with its real tokens and cost; a cost that stays
unknown keeps the estimate (never zero), and a call the engine ended without
any upstream answer costs nothing.

A budgeted key is refused (``403``, ``unpriced_lane``) on a lane with a source
laneway cannot price, its ``fallback_lanes`` included, unless the key says
``allow_unpriced: true``: such a call could spend without the budget seeing
it. A call is estimated at the dearest source of its chain and priced on the
lane that answered it (earlier lanes' billed parts on their own lanes). ``unpriced_lanes`` lists the
pairs for ``laneway check``. The figures live in the state store
(``laneway.state.keys``): shared between replicas through Redis.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from laneway.accounting.cost import cost_of
from laneway.config.models import KeyConfig, LanewayConfig
from laneway.core.errors import LanewayError
from laneway.core.types import UNJUDGED, Attempt, ChatRequest, EmbedRequest, Usage
from laneway.policy.quota import request_tokens, used_tokens
from laneway.server.asgi import Headers
from laneway.server.errors import Refused
from laneway.server.key_terms import KeyTerms, SpentBefore, carried_spend, config_terms
from laneway.server.limit_refusals import chain_unpriced, refused, unpriced_message
from laneway.state.keys.ledger import KeyAsk, KeyGrant, KeyLedger, KeyRefusal
from laneway.state.keys.memory import MemoryKeyLedger

if TYPE_CHECKING:
    from laneway.accounting.pricer import Pricer
    from laneway.core.clock import TimeSource


NO_WINDOW = KeyGrant()


@dataclass(frozen=True, slots=True)
class Hold:
    """A reserved call: what it asked for, the lane it runs on, and the window it left."""

    ask: KeyAsk
    lane: str
    kind: str
    grant: KeyGrant = NO_WINDOW
    terms: KeyTerms | None = None
    """The key's terms, for its budget alerts (``None``: the call has no budget)."""
    carried: Mapping[str, float] | None = None
    """USD spent before laneway counted the key, by budget period (``SpentBefore``)."""

    def rate_headers(self) -> Headers:
        """``X-RateLimit-*`` for the key's ``rpm`` and ``tpm``, from the reservation's answer.

        As OpenAI sends them on every answer: the limit, what is left of it in
        the window, and (``reset``) when the window's oldest reservation
        leaves it, freeing room. Nothing for a key without either limit.
        """
        ask, grant = self.ask, self.grant
        headers: Headers = []
        for name, cap, used in (
            ("requests", ask.rpm, grant.requests),
            ("tokens", ask.tpm, grant.tokens),
        ):
            if cap is not None:
                headers += [
                    (f"x-ratelimit-limit-{name}".encode(), str(cap).encode()),
                    (f"x-ratelimit-remaining-{name}".encode(), str(max(cap - used, 0)).encode()),
                    (f"x-ratelimit-reset-{name}".encode(), f"{grant.frees_in:.3f}s".encode()),
                ]
        return headers


class SettledAnswer(Protocol):
    """What a finished call reports for settlement (a response, or a stream once ended)."""

    @property
    def attempts(self) -> Sequence[Attempt]: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def source(self) -> str | None: ...


class LaneAnswer(SettledAnswer, Protocol):
    """A finished call's answer that names the lane which gave it (the lane called, or one
    of its fallback lanes)."""

    @property
    def lane(self) -> str: ...


class LimitedCall:
    """``async with``: reserve on entry, settle on exit with what ``answered`` was given."""

    def __init__(
        self,
        limits: KeyLimits | None,
        key: KeyTerms | None,
        lane: str,
        request: ChatRequest | EmbedRequest | None,
        spent_before: SpentBefore | None = None,
    ) -> None:
        self._limits = limits
        self._key = key
        self._lane = lane
        self._request = request
        self._spent_before = spent_before
        self._hold: Hold | None = None
        self._answer: SettledAnswer | None = None
        self._answered_on = lane

    def answered(self, answer: SettledAnswer, lane: str) -> None:
        """The call's result (or its ended stream) and the lane that gave it (``lane``, or
        one of its fallback lanes), for its real tokens and cost."""
        self._answer = answer
        self._answered_on = lane

    @property
    def rate_headers(self) -> Headers:
        """The key's ``X-RateLimit-*`` answer headers (none for a key without rpm or tpm)."""
        return [] if self._hold is None else self._hold.rate_headers()

    async def __aenter__(self) -> LimitedCall:
        if self._limits is not None and self._key is not None:
            self._hold = await self._limits.hold(
                self._key, self._lane, self._request, self._spent_before
            )
        return self

    async def __aexit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        limits, hold = self._limits, self._hold
        if limits is None or hold is None:
            return
        settled = limits.settle(hold, self._answer, error, self._answered_on)
        if limits.settles_inline:
            # Nothing in it suspends, so no cancellation can cut it halfway: the shield's
            # task (a task and a loop turn per call) would buy nothing here.
            await settled
        else:
            await asyncio.shield(settled)


UNLIMITED = LimitedCall(None, None, "", None)
"""The call context of a key without limits: enters and exits at no cost."""


class KeyLimits:
    """The limits of every configured key, over one ``KeyLedger``.

    ``lanes`` maps each lane to its kind and source names; ``pricer`` prices
    answers and estimates (``None`` when no key has a budget).
    """

    def __init__(
        self,
        keys: Sequence[KeyConfig],
        lanes: Mapping[str, tuple[str, Sequence[str]]],
        ledger: KeyLedger,
        clock: TimeSource,
        pricer: Pricer | None,
        chains: Mapping[str, Sequence[str]] | None = None,
        alerts: BudgetWatch | None = None,
    ) -> None:
        self.ledger = ledger
        self.settles_inline = isinstance(ledger, MemoryKeyLedger)
        """True when settling never awaits anything (the in-process ledger)."""
        self.chains = dict(chains or {})
        """Each lane's fallback chain, where it has one."""
        self.clock = clock
        self.pricer = pricer
        self.lanes = lanes
        self.keys = {key.name: config_terms(key) for key in keys if key.limited}
        self.alerts = alerts
        """Told of each budgeted call's spend, and of budget refusals (budget alerts)."""
        self.refusals: dict[tuple[str, str], int] = {}
        """Refused calls by (key, limit), for ``/metrics``."""
        # Tickets name reservations in windows shared by replicas: a random prefix per
        # process and a counter are as unique as uuid4 there, for a fraction of its cost.
        self._ticket_prefix = secrets.token_hex(6)
        self._tickets = itertools.count()

    def call(
        self,
        key: str | None,
        lane: str,
        request: ChatRequest | EmbedRequest | None,
        stored: KeyTerms | None = None,
        spent_before: SpentBefore | None = None,
    ) -> LimitedCall:
        """The context a call of ``key`` runs in (``UNLIMITED`` for a key without limits);
        ``stored`` is a stored key's limits (``server.stored_keys``), given only when it
        has some, and ``spent_before`` what it spent before laneway counted it."""
        config = stored if stored is not None else None if key is None else self.keys.get(key)
        if config is None:
            return UNLIMITED
        return LimitedCall(self, config, lane, request, spent_before)

    async def hold(
        self,
        config: KeyTerms,
        lane: str,
        request: ChatRequest | EmbedRequest | None,
        spent_before: SpentBefore | None = None,
    ) -> Hold:
        """Reserve one call of ``config``'s key on ``lane``, or raise ``Refused`` naming the
        limit. ``spent_before`` counts in the budget periods it falls in: the ledger is asked
        with caps lowered by it, and a refusal names the key's own cap and the whole spend."""
        key = config.name
        kind, _ = self.lanes[lane]
        if config.budgeted and not config.allow_unpriced:
            unpriced = self.unpriced_sources(lane)
            if unpriced:
                self._count(key, "unpriced_lane")
                raise Refused(403, "unpriced_lane", unpriced_message(key, lane, unpriced))
        tokens = 0 if request is None else request_tokens(request)
        ask = KeyAsk(
            key=key,
            ticket=f"{self._ticket_prefix}-{next(self._tickets)}",
            tokens=tokens,
            usd=self._estimate(lane, kind, request) if config.budgeted else 0.0,
            rpm=config.rpm,
            tpm=config.tpm,
            max_concurrency=config.max_concurrency,
            budgets=config.budgets,
        )
        carried = carried_spend(config, spent_before, self.clock.wall())
        if carried is not None:
            ask = replace(ask, budgets=carried.lowered(config))
        reserved = await self.ledger.reserve(ask)
        if isinstance(reserved, KeyRefusal):
            if carried is not None:
                reserved = carried.raised(reserved)
            self._count(key, reserved.limit)
            if self.alerts is not None and reserved.spent is not None:
                self.alerts.refused(config, reserved)
            raise refused(key, reserved)
        terms = config if config.budgeted else None
        return Hold(ask, lane, kind, reserved, terms, None if carried is None else carried.own)

    async def settle(
        self,
        hold: Hold,
        answer: SettledAnswer | None,
        error: BaseException | None,
        answered_on: str | None = None,
    ) -> None:
        """Put the call's real tokens and cost in place of its estimates, free its slot.

        ``answered_on`` is the lane that answered (default: the lane called).
        """
        ended = isinstance(error, LanewayError)
        usage = None if answer is None else answer.usage
        tokens: int | None = None
        usd: float | None = None
        if answer is None or (ended and (usage is None or not usage.known)):
            if ended:  # the engine ended it with no usage: no upstream answer was billed
                tokens, usd = 0, 0.0
        else:
            tokens = used_tokens(usage) if usage is not None and usage.known else None
            if hold.terms is not None:  # only a budget reads the cost: no pricing for rpm alone
                usd = self._cost(hold, answer, answered_on or hold.lane)
            losers = race_losers(answer.attempts)
            if losers:  # the provider may bill a cancelled loser: it counts by its reservation
                tokens = None if tokens is None else tokens + losers * hold.ask.tokens
                usd = None if usd is None else usd + losers * hold.ask.usd
        spend = await self.ledger.settle(hold.ask, tokens, usd)
        if self.alerts is not None and hold.terms is not None and spend:
            self.alerts.spent(hold.terms, spend, hold.carried or {})

    @property
    def closables(self) -> list[BudgetWatch | KeyLedger]:
        """What a generation closes when no other uses it: the ledger, the budget alerts."""
        return [self.ledger] if self.alerts is None else [self.ledger, self.alerts]

    async def aclose(self) -> None:
        """Stop the budget alerts, then close the ledger."""
        if self.alerts is not None:
            await self.alerts.aclose()
        await self.ledger.aclose()

    def unpriced_sources(self, lane: str) -> list[str]:
        """The sources of ``lane`` and its fallback lanes (``other/source``) laneway has no
        price for."""
        chain = self._chain(lane)
        entries = {} if self.pricer is None else self.pricer.entries
        unpriced = {
            name: [s for s in self.lanes[name][1] if entries.get((name, s)) is None]
            for name in chain
        }
        return chain_unpriced(unpriced, chain)

    def _chain(self, lane: str) -> Sequence[str]:
        return self.chains.get(lane) or (lane,)

    def _cost(self, hold: Hold, answer: SettledAnswer, lane: str) -> float | None:
        if getattr(answer, "cache", None) == "hit":
            return 0.0
        if self.pricer is None:
            return None
        cost = self.pricer.answer_cost(
            lane,
            hold.kind,
            self.clock.wall(),
            answer.attempts,
            answer.usage or Usage(),
            answer.source,
        )
        return cost.usd

    def _estimate(self, lane: str, kind: str, request: ChatRequest | EmbedRequest | None) -> float:
        """The dearest priced source's cost at the request's estimated size, over the chain."""
        if self.pricer is None or request is None:
            return 0.0
        usage = _estimated_usage(request)
        wall = self.clock.wall()
        costs = (
            cost_of(usage, self.pricer.rate(name, source, wall), kind).usd
            for name in self._chain(lane)
            for source in self.lanes[name][1]
        )
        return max((c for c in costs if c is not None), default=0.0)

    def _count(self, key: str, limit: str) -> None:
        labels = (key, limit)
        self.refusals[labels] = self.refusals.get(labels, 0) + 1


class BudgetWatch(Protocol):
    """What hears of budgeted calls: each one's spend, and each budget refusal."""

    def spent(
        self, terms: KeyTerms, spend: Mapping[str, float], carried: Mapping[str, float]
    ) -> None:
        """A call of ``terms``'s key settled; ``spend`` is its counters as settling left them."""

    def refused(self, terms: KeyTerms, refusal: KeyRefusal) -> None:
        """A call of ``terms``'s key was refused by a budget (``refusal.spent`` is set)."""

    async def aclose(self) -> None:
        """Stop sending."""


def race_losers(attempts: Sequence[Attempt]) -> int:
    """The attempts of a hedge race cancelled because another won (``began`` marks a raced
    attempt; a stream its caller closed is cancelled too, but counted by its own usage)."""
    return sum(1 for a in attempts if a.outcome in UNJUDGED and a.began is not None)


def stores_keys(config: LanewayConfig) -> bool:
    """True when the config has a key store (``server.key_store`` or ``admin_keys``)."""
    return config.server.key_store is not None or bool(config.server.admin_keys)


def limits_keys(config: LanewayConfig) -> bool:
    """True when a call may meet a key's limits: a configured key has one, or there is a key
    store (whose keys may have them). ``laneway.app`` then builds the ``KeyLimits``."""
    return stores_keys(config) or any(key.limited for key in config.server.keys)


def _estimated_usage(request: ChatRequest | EmbedRequest) -> Usage:
    """Prompt tokens estimated from the text, completion tokens from ``max_tokens`` (else 0)."""
    if isinstance(request, EmbedRequest):
        return Usage(prompt_tokens=request_tokens(request), source="estimated")
    limit = request.params.get("max_completion_tokens") or request.params.get("max_tokens")
    completion = limit if isinstance(limit, int) else 0
    prompt = max(request_tokens(request) - completion, 0)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, source="estimated")
