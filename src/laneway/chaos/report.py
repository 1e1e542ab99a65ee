"""Outcomes as a table for the terminal, as cells for Markdown, and as JSON."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from laneway.chaos.runner import ScenarioOutcome
from laneway.chaos.targets import Target

HEADER = (
    "scenario",
    "calls",
    "success",
    "429s/success",
    "attempts/success",
    "p50",
    "p99",
    "overruns",
    "targets",
)


def cells(outcome: ScenarioOutcome) -> list[str]:
    """One row of figures: see ``HEADER``."""
    s = outcome.scenario
    name = f"{s.number} {s.key}"
    m = outcome.metrics
    if m is None:
        return [name, *["-"] * 7, "not run"]
    return [
        name,
        str(m.calls),
        f"{m.success_rate:.1%}",
        _ratio(m.throttled_per_ok),
        _ratio(m.attempts_per_ok),
        _seconds(m.p50),
        _seconds(m.p99),
        f"{m.overruns} (worst +{m.worst_overrun:.2f} s)" if m.overruns else "0",
        scenario_verdict(outcome),
    ]


def scenario_verdict(outcome: ScenarioOutcome) -> str:
    """``met``, ``NOT met (k of n)`` or ``not run``."""
    if outcome.metrics is None:
        return "not run"
    missed = sum(not t.met for t in outcome.targets)
    return "met" if not missed else f"NOT met ({missed} of {len(outcome.targets)})"


def describe_target(target: Target) -> str:
    """``goal: met (measured)`` (or ``NOT met``): the verdict next to what it judges."""
    return f"{target.goal}: {'met' if target.met else 'NOT met'} ({target.measured})"


def target_lines(outcome: ScenarioOutcome) -> list[str]:
    """The scenario's targets, then how its calls failed, then its notes, one per line."""
    return [describe_target(t) for t in outcome.targets] + note_lines(outcome)


def note_lines(outcome: ScenarioOutcome) -> list[str]:
    """How the scenario's calls failed, then its notes, one per line."""
    lines = []
    if outcome.metrics is not None and outcome.metrics.failures:
        counts = ", ".join(f"{label} {count}" for label, count in outcome.metrics.failures)
        lines.append(f"failed calls: {counts}")
    return lines + outcome.notes


def text_table(outcomes: Sequence[ScenarioOutcome]) -> str:
    """The figures as an aligned table, each target named beside its verdict.

    A scenario's first target sits in its row; further ones continue on the
    lines below, so no "met" stands alone. Failed calls and notes follow the table.
    """
    rows = [list(HEADER)]
    for outcome in outcomes:
        row = cells(outcome)
        judged = [describe_target(t) for t in outcome.targets] or [row[-1]]
        rows.append([*row[:-1], judged[0]])
        rows += [[*[""] * (len(HEADER) - 1), more] for more in judged[1:]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
    lines.insert(1, "  ".join([*("-" * w for w in widths), "-" * len(HEADER[-1])]))
    notes = [
        f"  {o.scenario.number} {o.scenario.key}: {line}"
        for o in outcomes
        for line in note_lines(o)
    ]
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(line.rstrip() for line in lines)


def as_json(outcomes: Sequence[ScenarioOutcome]) -> list[dict[str, Any]]:
    """Everything measured, for other tools (``bench/chaos_litellm.py`` reads it)."""
    return [
        {
            "scenario": o.scenario.key,
            "number": o.scenario.number,
            "title": o.scenario.title,
            "metrics": None if o.metrics is None else dataclasses.asdict(o.metrics),
            "targets": [dataclasses.asdict(t) for t in o.targets],
            "notes": o.notes,
            "cells": cells(o),
            "lines": target_lines(o),
        }
        for o in outcomes
    ]


def _ratio(value: float) -> str:
    return "-" if math.isinf(value) else f"{value:.2f}"


def _seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f} s"
