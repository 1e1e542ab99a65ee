"""``laneway check``: what each lane's policy will do, before it does it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from laneway.accounting import Pricer, Rate
from laneway.config.models import LaneConfig, LanewayConfig
from laneway.core.units import format_duration
from laneway.engine.lane import Lane, build_lane, retry_policy
from laneway.providers.limits import limits_of


@dataclass(frozen=True, slots=True)
class LaneReport:
    """One row of the check table and the warnings for that lane."""

    lane: str
    row: list[str]
    warnings: list[str]


HEADER = [
    "lane",
    "kind",
    "attempts",
    "per-attempt",
    "backoff",
    "retry_on",
    "deadline",
    "worst case",
]


def lane_report(name: str, lane: LaneConfig, environ: Mapping[str, str]) -> LaneReport:
    """Describe one lane and list what will not work as declared."""
    policy = retry_policy(lane)
    per_attempt = lane.per_attempt
    worst = policy.worst_case(per_attempt, lane.deadline)
    schedule = [policy.backoff.ceiling(n) for n in range(1, lane.retries + 1)]
    backoff = ", ".join(format_duration(s) for s in schedule) or "-"
    if lane.backoff.jitter != "none" and schedule:
        backoff += f" (jitter {lane.backoff.jitter})"
    row = [
        name,
        lane.kind,
        str(lane.retries + 1),
        format_duration(per_attempt),
        backoff,
        ", ".join(str(c) for c in lane.retry_on) or "-",
        format_duration(lane.deadline),
        format_duration(worst),
    ]
    return LaneReport(name, row, _warnings(name, lane, environ, worst))


def _warnings(name: str, lane: LaneConfig, environ: Mapping[str, str], worst: float) -> list[str]:
    out: list[str] = []
    start = 0.0
    policy = retry_policy(lane)
    for retry in range(1, lane.retries + 1):
        start += lane.per_attempt + policy.backoff.ceiling(retry)
        if start + lane.min_attempt > lane.deadline:
            out.append(
                f"{name}: retry {retry} can never start when attempts run their full "
                f"{format_duration(lane.per_attempt)}: it would begin at "
                f"{format_duration(start)}, past the deadline {format_duration(lane.deadline)}"
            )
            break
    if lane.client_deadline is not None and lane.client_deadline < worst:
        out.append(
            f"{name}: client_deadline {format_duration(lane.client_deadline)} is shorter than "
            f"the lane's worst case {format_duration(worst)}: the caller gives up first"
        )
    if lane.per_attempt > lane.deadline:
        out.append(f"{name}: attempt_timeout is longer than the deadline; the deadline cuts it")
    built = build_lane(name, lane, environ)
    out.extend(f"{name}: {p}" for p in built.problems)
    out.extend(expressiveness_warnings(built))
    return out


def expressiveness_warnings(lane: Lane) -> list[str]:
    """One warning per source that cannot carry what another source of the lane can.

    A call using such a feature skips that source (it is listed in the
    attempts as ``unsupported``), so the lane has fewer fallbacks for it.
    """
    if lane.kind == "embed":
        return []
    limits = {source.name: limits_of(source.provider) for source in lane.sources}
    shared = set.intersection(*(set(found) for found in limits.values())) if limits else set()
    out = []
    for source, found in limits.items():
        own = [feature for feature in found if feature not in shared]
        if own:
            out.append(
                f"{lane.name}: sources differ in what they can carry: {source} cannot carry "
                f"{', '.join(own)}; calls using them skip it"
            )
    return out


def render(config: LanewayConfig, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """The table and the warnings for every lane."""
    reports = [lane_report(n, lane, environ) for n, lane in config.lanes.items()]
    rows = [HEADER, *(r.row for r in reports)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines), [w for r in reports for w in r.warnings]


def price_report(config: LanewayConfig, now: float) -> tuple[list[str], list[str]]:
    """One line per source saying which price applies, and errors for ``require_price``.

    A source without a price is listed whatever its lane says: its calls will
    show their cost as unknown, never as $0. A lane with ``require_price``
    turns that into an error.
    """
    pricer = Pricer.for_lanes(config.lanes)
    lines: list[str] = []
    errors: list[str] = []
    for lane, source in pricer.entries:
        rate = pricer.rate(lane, source, now)
        if rate is not None:
            lines.append(f"price {lane}/{source}: {_describe_rate(rate)}")
            continue
        lines.append(f"price {lane}/{source}: UNPRICED, cost will read n/a (set price: on it)")
        if config.lanes[lane].require_price:
            errors.append(f"{lane}: require_price is set but source {source} has no price")
    return lines, errors


def _describe_rate(rate: Rate) -> str:
    parts = [f"input {rate.input.base:g}"]
    if rate.output is not None:
        parts.append(f"output {rate.output.base:g}")
    if rate.cached_input is not None:
        parts.append(f"cached {rate.cached_input.base:g}")
    if rate.cache_write is not None:
        parts.append(f"cache write {rate.cache_write.base:g}")
    kinds = (rate.input, rate.output, rate.cached_input, rate.cache_write)
    tiered = any(t is not None and t.tiers for t in kinds)
    return f"{', '.join(parts)} USD/Mtok{' (+tiers)' if tiered else ''} from {rate.origin}"
