"""Budget alerts: a key's or a team's spend reached 50%, 80%, 100% of its budget.

The key limits tell ``BudgetAlerts`` of each budgeted call's counters as
settling left them, and of each budget refusal (which counts as reaching the
highest threshold: the budget refuses calls). Deciding costs a few dict
reads on the request path and nothing else: an alert is put on a bounded
queue, and a worker task takes it off the path. The worker claims it in the
key ledger (``KeyLedger.claim``: with Redis state, once across every
replica; its name holds the period, the cap and the threshold, so each is
sent once per period, again when the cap changes), writes a ``laneway.alerts``
log line, and POSTs it to ``server.alerts.webhook`` when there is one: at
most ``ATTEMPTS`` times, then the failure is logged and the alert dropped. A
full queue drops the alert and says so in the log (once per burst).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import orjson

from laneway.config.models import LanewayConfig
from laneway.core.clock import TimeSource
from laneway.core.errors import ConfigError
from laneway.policy.budget import BudgetCap, period_left, period_name, reached
from laneway.server.key_terms import KeyTerms
from laneway.state.keys.ledger import BUDGET_LIMITS, KeyLedger, KeyRefusal, key_owner

log = logging.getLogger("laneway.alerts")

QUEUE_SIZE = 1000
"""Alerts waiting for the worker; more are dropped (and logged), never waited for."""
ATTEMPTS = 3
"""POSTs of one alert to the webhook before it is given up."""
SEEN_SIZE = 10_000
"""Claim names remembered in process before the memory is cleared (bounded memory)."""
TOTAL_TTL = 400 * 86_400.0
"""How long the claim of a ``total`` budget's alert lasts (the period never ends)."""


@dataclass(frozen=True, slots=True)
class BudgetAlert:
    """One threshold a budget's spend reached in one period."""

    owner: str
    """``key`` or ``team``."""
    name: str
    key: str
    """The key whose call reached it (for a team, one of its keys)."""
    period: str
    period_name: str
    threshold: float
    budget_usd: float
    spent_usd: float
    refused: bool
    at: float

    @property
    def claim(self) -> str:
        """The name the alert is claimed under: once per period, cap and threshold."""
        return (
            f"alert:{self.owner}:{self.name}:{self.period_name}:"
            f"{self.budget_usd!r}:{self.threshold!r}"
        )

    def body(self) -> bytes:
        """The webhook's JSON body (no secret: names, figures, the period)."""
        return orjson.dumps(
            {
                "event": "budget_threshold",
                "owner": self.owner,
                "name": self.name,
                "key": self.key,
                "period": self.period,
                "period_name": self.period_name,
                "threshold": self.threshold,
                "budget_usd": self.budget_usd,
                "spent_usd": round(self.spent_usd, 9),
                "refused": self.refused,
                "at": datetime.fromtimestamp(self.at, UTC).isoformat(),
            }
        )

    def line(self) -> str:
        """The log line: who, how much of what, in which period."""
        what = f"{self.owner} {self.name!r}" + (
            f" (key {self.key!r})" if self.owner == "team" else ""
        )
        cap = f"${self.budget_usd:g} {BUDGET_LIMITS[self.period].replace('_', ' ')}"
        where = "" if self.period == "total" else f" in {self.period_name}"
        text = (
            f"budget alert: {what} reached {self.threshold:.0%} of its {cap}{where}: "
            f"${self.spent_usd:.6f} spent"
        )
        return text + ("; it refuses calls" if self.refused else "")


class BudgetAlerts:
    """Decides budget alerts on the request path and sends them off it (see the module)."""

    def __init__(
        self,
        thresholds: Sequence[float],
        claims: KeyLedger,
        clock: TimeSource,
        *,
        webhook: str | None = None,
        timeout: float = 5.0,
        queue_size: int = QUEUE_SIZE,
        retry_wait: float = 1.0,
    ) -> None:
        self.thresholds = tuple(thresholds)
        self.claims = claims
        self.clock = clock
        self.webhook = webhook
        self.timeout = timeout
        self.retry_wait = retry_wait
        self.sent = 0
        """Alerts this process claimed and logged (and posted, with a webhook)."""
        self.dropped = 0
        """Alerts dropped: the queue was full, or the webhook failed every attempt."""
        self._queue: asyncio.Queue[BudgetAlert] = asyncio.Queue(queue_size)
        self._seen: set[str] = set()
        """Claim names queued by this process: each is queued once."""
        self._worker: asyncio.Task[None] | None = None
        self._full = False
        self._closed = False

    def spent(
        self, terms: KeyTerms, spend: Mapping[str, float], carried: Mapping[str, float]
    ) -> None:
        """A call of ``terms``'s key settled; ``spend`` holds its counters as it left them,
        ``carried`` the key's spend from before laneway by period (its team's is on ``terms``)."""
        if not self.thresholds:
            return
        wall = self.clock.wall()
        own = key_owner(terms.name)
        for budget in terms.budgets:
            instance = period_name(budget.period, wall)
            spent = spend.get(f"{budget.owner}:{instance}")
            if spent is None:
                continue
            if budget.owner == own:
                spent += carried.get(budget.period, 0.0)
            elif terms.team_spent is not None:
                spent += terms.team_spent.counted(wall, (budget.period,))[0]
            hit = reached(self.thresholds, spent, budget)
            if hit:
                self._raise(terms.name, budget, instance, hit[-1], spent, False, wall)

    def refused(self, terms: KeyTerms, refusal: KeyRefusal) -> None:
        """A budget refused a call of ``terms``'s key: it reached the highest threshold."""
        if not self.thresholds or refusal.spent is None:
            return
        owner = key_owner(terms.name) if refusal.team is None else f"team:{refusal.team}"
        budget = next(
            (
                b
                for b in terms.budgets
                if b.owner == owner and BUDGET_LIMITS[b.period] == refusal.limit
            ),
            None,
        )
        if budget is not None:
            wall = self.clock.wall()
            instance = period_name(budget.period, wall)
            top = self.thresholds[-1]
            self._raise(terms.name, budget, instance, top, refusal.spent, True, wall)

    async def aclose(self) -> None:
        """Stop the worker (alerts still queued are dropped: the process is stopping, or a
        reload retired this config's alerts and the next config's send from now on)."""
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None

    async def drained(self) -> None:
        """Wait until every queued alert was handled (for tests and an orderly stop)."""
        await self._queue.join()

    def _raise(
        self,
        key: str,
        budget: BudgetCap,
        instance: str,
        threshold: float,
        spent: float,
        refused: bool,
        wall: float,
    ) -> None:
        kind, _, name = budget.owner.partition(":")
        alert = BudgetAlert(
            kind, name, key, budget.period, instance, threshold, budget.usd, spent, refused, wall
        )
        if alert.claim in self._seen:
            return
        if len(self._seen) >= SEEN_SIZE:  # the ledger's claims keep each alert once anyway
            self._seen.clear()
        for lower in self.thresholds:  # a jump past several thresholds alerts the highest
            if lower <= threshold:
                self._seen.add(replace(alert, threshold=lower).claim)
        self._enqueue(alert)

    def _enqueue(self, alert: BudgetAlert) -> None:
        if self._closed:  # a call of a retired config ended: its alert is the next one's
            self._seen.discard(alert.claim)
            return
        try:
            self._queue.put_nowait(alert)
        except asyncio.QueueFull:
            self.dropped += 1
            if not self._full:
                log.warning("budget alerts: the queue is full; dropping %s", alert.line())
            self._full = True
            return
        self._full = False
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name="alerts")

    async def _work(self) -> None:
        while True:
            alert = await self._queue.get()
            try:
                await self._handle(alert)
            except Exception:  # an alert must never take the worker down
                log.exception("budget alerts: sending %s failed", alert.line())
            finally:
                self._queue.task_done()

    async def _handle(self, alert: BudgetAlert) -> None:
        left = period_left(alert.period, alert.at)
        ttl = TOTAL_TTL if math.isinf(left) else left + 86_400.0
        if not await self.claims.claim(alert.claim, ttl):
            return  # another replica (or an earlier run of this one) sent it
        log.warning("%s", alert.line())
        self.sent += 1
        if self.webhook is not None:
            await self._post(alert, self.webhook)

    async def _post(self, alert: BudgetAlert, url: str) -> None:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self.timeout)
        headers = {"content-type": "application/json"}
        for attempt in range(1, ATTEMPTS + 1):
            try:
                async with (
                    aiohttp.ClientSession(timeout=timeout) as session,
                    session.post(url, data=alert.body(), headers=headers) as response,
                ):
                    if response.status < 300:
                        return
                    reason = f"answered {response.status}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                reason = type(exc).__name__
            log.warning(
                "budget alerts: the webhook failed (%s), attempt %d of %d",
                reason,
                attempt,
                ATTEMPTS,
            )
            if attempt < ATTEMPTS:
                await asyncio.sleep(self.retry_wait * attempt)
        self.dropped += 1
        log.warning("budget alerts: gave up posting %s", alert.line())


def budget_alerts(
    config: LanewayConfig, environ: Mapping[str, str], ledger: KeyLedger, clock: TimeSource
) -> BudgetAlerts:
    """The budget alerts ``server.alerts`` describes, claimed in ``ledger``."""
    settings = config.server.alerts
    webhook = None if settings.webhook is None else settings.webhook.resolve(environ)
    if settings.webhook is not None and webhook is None:
        raise ConfigError(
            f"server.alerts.webhook: environment variable {settings.webhook.env} is unset"
        )
    if webhook is not None and not webhook.startswith(("http://", "https://")):
        raise ConfigError("server.alerts.webhook: give an http:// or https:// URL")
    return BudgetAlerts(
        settings.thresholds, ledger, clock, webhook=webhook, timeout=settings.webhook_timeout
    )
