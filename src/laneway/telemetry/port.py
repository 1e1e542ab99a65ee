"""The telemetry port: what the writer and ``laneway spend`` need from a database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Row = tuple[Any, ...]
"""One call, its values in ``schema.COLUMNS`` order (``None`` where unknown)."""


@dataclass(frozen=True, slots=True)
class SpendRow:
    """One group of ``laneway spend``: counts, provider-reported sums, costs.

    Sums are ``None`` when no call of the group reported the figure; ``cost_usd``
    covers priced calls only and ``estimated_cost_usd`` estimated ones.
    """

    group: str | None
    calls: int
    errors: int
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: float | None
    priced: int
    unpriced: int
    usage_unknown: int
    estimated: int
    estimated_cost_usd: float | None


@dataclass(frozen=True, slots=True)
class CallSample:
    """One recorded call as ``laneway size`` reads it: its attempts, in order.

    ``attempts`` holds each attempt as telemetry stored it (``source``,
    ``outcome``, ``elapsed_ms``, ``status``...); for a stream, an ``ok``
    attempt's ``elapsed_ms`` is its time to first token.
    """

    time: float
    kind: str
    stream: bool
    outcome: str
    latency_ms: float
    attempts: tuple[dict[str, Any], ...]
    tokens: int | None = None
    """The call's total tokens, as the upstream reported them (``None``: unknown)."""


class TelemetryStore(Protocol):
    """A database of call rows. Adapters: ``SqliteTelemetryStore``, ``PostgresTelemetryStore``."""

    async def open(self) -> None:
        """Connect, then create or migrate the schema (``TelemetryError`` on a foreign one)."""
        ...

    async def write_batch(self, rows: Sequence[Row], batch: str | None = None) -> None:
        """Insert ``rows`` in one transaction.

        A ``batch`` name is recorded in that transaction; a batch of a name
        already recorded is not written again (a retry after a lost answer).
        """
        ...

    async def query_spend(self, since: float, by: str) -> list[SpendRow]:
        """Spend of calls started at or after Unix time ``since``, grouped by ``by``."""
        ...

    async def query_calls(self, since: float, lane: str) -> list[CallSample]:
        """The calls of ``lane`` started at or after ``since``, oldest first."""
        ...

    async def close(self) -> None:
        """Release the connection(s)."""
        ...
