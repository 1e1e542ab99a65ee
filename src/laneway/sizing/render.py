"""``laneway size`` output: the lane's evidence, the candidate table, the YAML to paste."""

from __future__ import annotations

from collections.abc import Sequence

from laneway.core.units import format_duration
from laneway.sizing.candidates import Goal, Score
from laneway.sizing.samples import Distribution, RecordedCall, SourceProfile


def table(rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, the first left-aligned, the rest right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def evidence(lane: str, calls: Sequence[RecordedCall], sources: Sequence[SourceProfile]) -> str:
    """Per source: answers' latency and first-token percentiles, failures, and rescues."""
    failed_first = sum(1 for c in calls if c.attempts and not c.attempts[0].ok)
    rescued = sum(1 for c in calls if c.rescued)
    head = [
        f"lane {lane}: {len(calls)} recorded call(s); "
        f"{failed_first} had a failed first attempt, {rescued} of them rescued by a retry"
    ]
    rows = [["source", "attempts", "answers", "p50", "p90", "p99", "max", "failures"]]
    for profile in sources:
        rows.extend(_profile_rows(profile))
    return "\n".join([*head, table(rows)])


def candidates_table(scores: Sequence[Score], pick: Score | None, goal: Goal) -> str:
    """One row per candidate; ``*`` marks the recommended one."""
    margin_head = "margin (p99)" if goal.client_deadline is not None else "margin"
    rows = [
        [
            "",
            "from",
            "attempt_timeout",
            "retries",
            "deadline",
            "answered",
            "cut",
            "p99 wall",
            "worst case",
            "requests/call",
            margin_head,
        ]
    ]
    for s in scores:
        t = s.settings
        rows.append(
            [
                "*" if s is pick else "",
                t.label,
                format_duration(t.attempt_timeout),
                str(t.retries),
                format_duration(t.deadline),
                f"{s.answered:.1%}",
                f"{s.cut:.1%}",
                format_duration(s.p99_wall),
                format_duration(s.worst_case),
                f"{s.requests:.2f}",
                "-" if s.margin is None else format_duration(s.margin),
            ]
        )
    return table(rows)


def yaml_snippet(lane: str, pick: Score) -> str:
    """The recommended settings as laneway.yaml lines."""
    s = pick.settings
    lines = [
        "lanes:",
        f"  {lane}:",
        f"    deadline: {format_duration(s.deadline)}",
        f"    attempt_timeout: {format_duration(s.attempt_timeout)}",
        f"    retries: {s.retries}",
    ]
    if s.first_byte_timeout is not None:
        lines.append(f"    first_byte_timeout: {format_duration(s.first_byte_timeout)}")
    return "\n".join(lines)


def _profile_rows(profile: SourceProfile) -> list[list[str]]:
    failures = ", ".join(f"{name} x{count}" for name, count in profile.failures.items()) or "-"
    rows = []
    for label, dist in (("answer", profile.latency), ("first token", profile.first_token)):
        if dist is not None:
            rows.append([f"{profile.source} ({label})", str(profile.attempts), *_cells(dist)])
    if not rows:
        rows.append([profile.source, str(profile.attempts), "0", "-", "-", "-", "-"])
    rows[0].append(failures)
    for row in rows[1:]:
        row.append("")
    return rows


def _cells(dist: Distribution) -> list[str]:
    return [
        str(dist.count),
        *(format_duration(v) for v in (dist.p50, dist.p90, dist.p99, dist.max)),
    ]
