"""One item's result, as the library yields it and as a row of the output.

A row is the result's JSON form, and the checkpoint keeps rows exactly as
they are written out, so a resumed job writes the same bytes as one that ran
straight through. Rows carry no timings for that reason.

Usage and cost belong to upstream calls, not items: an embed call carries
many items and the upstream reports one usage for all of them. The call's
usage and cost therefore go on the first row of the call only (its other
rows carry the call number and no usage), so summing a column never counts
a call twice; a chat row is its own call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laneway.accounting.cost import Cost
from laneway.core.errors import CallFailed, LanewayError
from laneway.core.types import Usage

Vector = list[float]
USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_tokens",
)


@dataclass(frozen=True, slots=True)
class ItemError:
    """Why an item has no result: an error code, its message, and the attempts made."""

    code: str
    message: str
    attempts: tuple[dict[str, Any], ...] = ()

    @classmethod
    def of(cls, exc: LanewayError) -> ItemError:
        """The error a call ended with, as kept in ``failures.jsonl``."""
        attempts = exc.attempts if isinstance(exc, CallFailed) else ()
        code = getattr(exc, "code", "request_invalid")
        return cls(code, str(exc), tuple(a.as_dict() for a in attempts))


@dataclass(slots=True)
class ItemResult:
    """One item's outcome; ``error`` is set (and ``output`` ``None``) when it failed.

    ``output`` is the vector on embed lanes; on chat lanes the ``message``
    (role and content), ``finish_reason`` and, for structured batches, the
    validated ``value`` and the number of ``asks``. ``usage`` and ``cost`` are
    the call's, on the first row of each call only (``None`` on the others).
    """

    index: int
    id: str
    call: int
    output: Vector | dict[str, Any] | None = None
    source: str | None = None
    attempts: int = 0
    usage: Usage | None = None
    cost: Cost | None = None
    error: ItemError | None = None

    @property
    def ok(self) -> bool:
        """True when the item has a result."""
        return self.error is None

    @property
    def embedding(self) -> Vector:
        """The vector of an embed item (``ValueError`` on a chat item or a failure)."""
        if not isinstance(self.output, list):
            raise ValueError(f"item {self.id!r} has no embedding")
        return self.output

    def row(self) -> dict[str, Any]:
        """The output row: id, result, source, attempts, call, and usage/cost where owned."""
        if self.error is not None:
            raise ValueError(f"item {self.id!r} failed; it has a failure record, not a row")
        row: dict[str, Any] = {"id": self.id}
        if isinstance(self.output, list):
            row["embedding"] = self.output
        elif self.output is not None:
            row.update(self.output)
        row.update({"source": self.source, "attempts": self.attempts, "call": self.call})
        if self.usage is not None:
            row["usage"] = usage_dict(self.usage)
        if self.cost is not None:
            row["cost"] = {"usd": self.cost.usd, "status": self.cost.status}
        return row

    def failure(self) -> dict[str, Any]:
        """The ``failures.jsonl`` line of a failed item."""
        if self.error is None:
            raise ValueError(f"item {self.id!r} did not fail")
        return {
            "id": self.id,
            "index": self.index,
            "error": self.error.code,
            "message": self.error.message,
            "attempts": list(self.error.attempts),
        }


def from_row(index: int, row: dict[str, Any]) -> ItemResult:
    """The result a checkpointed row describes (the inverse of ``ItemResult.row``)."""
    body = {k: v for k, v in row.items() if k not in ("id", "source", "attempts", "call")}
    usage = body.pop("usage", None)
    cost = body.pop("cost", None)
    vector = body.pop("embedding", None)
    return ItemResult(
        index,
        row["id"],
        row["call"],
        vector if vector is not None else body,
        row["source"],
        row["attempts"],
        None if usage is None else Usage(**usage),
        None if cost is None else Cost(cost["usd"], cost["status"]),
    )


def from_failure(call: int, line: dict[str, Any]) -> ItemResult:
    """The failed result a checkpointed failure describes."""
    error = ItemError(line["error"], line["message"], tuple(line["attempts"]))
    return ItemResult(line["index"], line["id"], call, error=error)


def usage_dict(usage: Usage) -> dict[str, Any]:
    """The usage figures the upstream gave (or estimated), and where they came from."""
    figures = {name: getattr(usage, name) for name in USAGE_FIELDS}
    return {**{k: v for k, v in figures.items() if v is not None}, "source": usage.source}


def vector_problem(vector: Sequence[float], expected: int | None) -> str | None:
    """What is wrong with ``vector`` for a corpus, or ``None`` when it is sound.

    Its length must be ``expected``; a NaN or infinite component, or a vector
    of zeros, is refused too: either poisons every similarity computed with it.
    A finite sum proves every component finite (a NaN or an infinity makes the
    sum one), so components are looked at one by one only when it is not.
    """
    if expected is not None and len(vector) != expected:
        return f"length {len(vector)}, expected {expected}"
    if not math.isfinite(sum(vector)) and not all(math.isfinite(v) for v in vector):
        return "a component is NaN or infinite"
    if not any(vector):
        return "every component is zero"
    return None
