"""One fault row's result, and the table of them: for the terminal, Markdown and JSON.

A row shows what the caller got (``describe``), the requests each upstream
saw, the time to answer, and ``met`` or ``NOT met`` with the checks missed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laneway.chaos.asking import StreamedAnswer
from laneway.chaos.faults import EXPECTED, Check, Hits, describe_answer
from laneway.sim.scenarios import PRIMARY, FaultScenario, fault_scenario

HEADER = ("fault on the primary", "caller got", "requests primary/fallback", "time", "verdict")


@dataclass(frozen=True, slots=True)
class RowResult:
    """A scenario's calls as the caller saw them, the upstreams' counts, and the checks."""

    scenario: FaultScenario
    answers: list[StreamedAnswer]
    hits: Hits
    checks: list[Check]

    @property
    def met(self) -> bool:
        """Whether every check held."""
        return all(check.met for check in self.checks)

    def outcome(self) -> str:
        """What the caller got, in a few words."""
        if len(self.answers) == 1:
            return describe_answer(self.answers[0])
        answered = sum(a.status == 200 and a.done for a in self.answers)
        by_primary = sum(a.models == (PRIMARY,) for a in self.answers)
        return f"{answered} of {len(self.answers)} answered, {by_primary} by the primary"

    def requests(self) -> str:
        """Requests each upstream received (a refused connection is not counted)."""
        primary = "refused" if self.hits.primary is None else str(self.hits.primary)
        return f"{primary} / {self.hits.fallback}"

    def time(self) -> str:
        """Time to the end of the answer (the slowest of a series)."""
        slowest = max(a.elapsed for a in self.answers)
        return f"{slowest:.2f} s" if len(self.answers) == 1 else f"max {slowest:.2f} s"

    def verdict(self) -> str:
        """``met`` or ``NOT met``."""
        return "met" if self.met else "NOT met"

    def missed(self) -> list[str]:
        """The checks that did not hold: what was asked, what was measured."""
        return [f"{c.goal}: got {c.measured}" for c in self.checks if not c.met]

    def cells(self) -> list[str]:
        """The row under ``HEADER``."""
        s = self.scenario
        return [s.fault, self.outcome(), self.requests(), self.time(), self.verdict()]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RowResult:
        """Read back a row ``as_json`` wrote (in another process)."""
        answers = [StreamedAnswer(**{**a, "models": tuple(a["models"])}) for a in data["answers"]]
        checks = [Check(**c) for c in data["checks"]]
        return cls(fault_scenario(data["scenario"]), answers, Hits(**data["hits"]), checks)

    def as_json(self) -> dict[str, Any]:
        """Everything measured (``bench/faults_litellm.py`` reads it back)."""
        return {
            "scenario": self.scenario.key,
            "fault": self.scenario.fault,
            "must_get": EXPECTED[self.scenario.key].must_get,
            "answers": [dataclasses.asdict(a) for a in self.answers],
            "hits": dataclasses.asdict(self.hits),
            "checks": [dataclasses.asdict(c) for c in self.checks],
            "met": self.met,
        }


def fault_table(rows: Sequence[RowResult]) -> str:
    """The rows as an aligned table, then what each row's caller must get and what missed."""
    lines = _aligned([list(HEADER), *(row.cells() for row in rows)])
    lines += ["", "what the caller must get:"]
    for row in rows:
        lines.append(f"  {row.scenario.fault}: {EXPECTED[row.scenario.key].must_get}")
        lines += [f"    NOT met: {miss}" for miss in row.missed()]
    met = sum(row.met for row in rows)
    lines += ["", f"{met} of {len(rows)} rows met"]
    return "\n".join(lines)


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
