"""A hedged call's cancelled loser counts against its key by its reservation (issue 26).

The provider may bill a request it was sent and that was then cancelled, and
its usage is unknown: the key's tpm (and budget) count it as reserved, beside
the winner's real tokens, never as nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from laneway.config.models import KeyConfig
from laneway.core.clock import FakeClock
from laneway.core.types import CANCELLED, HEDGE_LOST, HEDGE_WON, Attempt, ChatRequest, Usage
from laneway.server.key_terms import config_terms
from laneway.server.limits import KeyLimits, race_losers
from laneway.state.keys.memory import MemoryKeyLedger

KEY = KeyConfig(name="k", sha256="0" * 64, tpm=10_000)
REQUEST = ChatRequest([{"role": "user", "content": "x" * 400}], {})
"""About 100 tokens reserved a call."""


@dataclass
class Answer:
    attempts: list[Attempt]
    usage: Usage | None = field(default_factory=lambda: Usage(10, 5, 15, source="provider"))
    source: str | None = "b"


async def tokens_left_after(answer: Answer) -> int:
    """The key's tpm left once ``answer`` settled (read from the next call's reservation)."""
    clock = FakeClock()
    limits = KeyLimits([KEY], {"l": ("chat", ["a", "b"])}, MemoryKeyLedger(clock), clock, None)
    hold = await limits.hold(config_terms(KEY), "l", REQUEST)
    await limits.settle(hold, answer, None)
    after = await limits.hold(config_terms(KEY), "l", None)
    return int(dict(after.rate_headers())[b"x-ratelimit-remaining-tokens"])


async def test_a_cancelled_loser_counts_by_its_reservation() -> None:
    alone = await tokens_left_after(Answer([Attempt("b", "ok", 0.1, 200)]))
    raced = [Attempt("a", CANCELLED, 0.2, began=0.0), Attempt("b", HEDGE_WON, 0.1, 200, began=0.2)]
    hedged = await tokens_left_after(Answer(raced))
    assert alone == 10_000 - 15
    assert alone - hedged == 100  # the loser's reservation: the request's estimate


def test_only_a_race_loser_is_counted_so() -> None:
    closed = Attempt("a", CANCELLED, 0.2, message="closed by the caller")
    lost = Attempt("b", HEDGE_LOST, 0.1, began=0.2)
    assert race_losers([closed, lost, Attempt("a", "ok", 0.3, 200, began=0.0)]) == 1
