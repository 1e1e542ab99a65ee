"""A key's limits cost only what they use: a key with an ``rpm`` alone never prices its
calls (only a budget reads a call's cost), so it pays nothing for pricing (issue 25)."""

from __future__ import annotations

from typing import Any

from laneway.config.models import BudgetConfig, KeyConfig
from laneway.core.clock import FakeClock
from laneway.core.types import Attempt, ChatRequest
from laneway.server.key_terms import config_terms
from laneway.server.limits import KeyLimits
from laneway.state.keys.memory import MemoryKeyLedger
from tests.server.test_hedged_key_limits import Answer

REQUEST = ChatRequest([{"role": "user", "content": "hello"}], {})


class CountingPricer:
    """A pricer that counts the answers it prices (each at one cent)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], Any] = {}
        self.asked = 0

    def rate(self, *args: Any) -> None:
        """No rate: a budgeted call's estimate is then unknown (``allow_unpriced``)."""

    def answer_cost(self, *args: Any) -> Any:
        self.asked += 1
        return type("Cost", (), {"usd": 0.01})()


async def priced_calls(key: KeyConfig) -> int:
    clock = FakeClock()
    pricer = CountingPricer()
    ledger = MemoryKeyLedger(clock)
    limits = KeyLimits([key], {"l": ("chat", ["a"])}, ledger, clock, pricer)  # type: ignore[arg-type]
    hold = await limits.hold(config_terms(key), "l", REQUEST)
    await limits.settle(hold, Answer([Attempt("a", "ok", 0.1, 200)], source="a"), None)
    return pricer.asked


async def test_a_key_with_an_rpm_alone_never_prices_its_calls() -> None:
    assert await priced_calls(KeyConfig(name="k", sha256="0" * 64, rpm=60)) == 0


async def test_a_key_with_a_budget_prices_each_call_it_settles() -> None:
    budgeted = KeyConfig(
        name="k", sha256="0" * 64, budget=BudgetConfig(monthly=5.0), allow_unpriced=True
    )
    assert await priced_calls(budgeted) == 1
