"""``laneway size [LANE]``: a deadline, timeouts and retries from measured latencies.

From telemetry (default): per source, the latency and first-token
distributions of answered attempts and the failure mix; then candidate
settings (``attempt_timeout`` at percentiles of the answers, ``retries``
0..3, the lane's backoff, a deadline that fits ``client_deadline``), each
replayed through the real call loop in virtual time; the recommended row, why,
and the YAML to paste; then the lane with and without a hedge, replayed, and
the hedge ``after`` to declare. ``--measure`` instead runs candidates live and
reports their real worst wall. ``--check`` exits non-zero when a lane's configured
settings leave less than ``--margin`` under its ``client_deadline`` at the
recorded p99, or cut more than ``--max-cut`` of the answers telemetry saw.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from laneway.app import open_transport
from laneway.app.policies import retry_policy
from laneway.cli.helptext import summary
from laneway.config.load import load_config
from laneway.config.models import LaneConfig, LanewayConfig, first_byte_timeout_of
from laneway.core.errors import ConfigError
from laneway.core.units import format_duration, parse_duration
from laneway.sizing.candidates import CandidateSettings, Goal, candidates, recommend, score
from laneway.sizing.hedging import hedge_lines
from laneway.sizing.measure import Measured, measure, slow_sources
from laneway.sizing.render import candidates_table, evidence, table, yaml_snippet
from laneway.sizing.samples import RecordedCall, profiles, recorded_calls
from laneway.telemetry import SqliteTelemetryStore, store_for_url

DEFAULT_MARGIN = 1.0


def main(argv: Sequence[str]) -> int:
    """Run ``laneway size``; the exit status says whether every check passed."""
    ns = _parser().parse_args(argv)
    try:
        config, environ = load_config(ns.config)
        lanes = _lanes(config, ns.lane)
        percentiles = [float(p) for p in ns.percentiles.split(",")]
        since = time.time() - parse_duration(ns.since)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if ns.measure:
        return _measure(ns, config, environ, lanes[0])
    try:
        recorded = asyncio.run(_recorded(config, Path(ns.config).parent, lanes, since, ns.sample))
    except Exception as exc:
        print(f"error: cannot read telemetry: {exc}", file=sys.stderr)
        return 2
    status = 0
    for name in lanes:
        goal = _goal(config.lanes[name], ns)
        calls = recorded.get(name, [])
        if ns.check:
            status |= _check(name, config.lanes[name], calls, goal, (ns.max_cut, ns.min_answered))
        else:
            _report(name, config.lanes[name], calls, goal, percentiles)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="laneway size", description=summary(__doc__))
    parser.add_argument("lane", nargs="?", help="the lane (every lane with --check)")
    parser.add_argument("--config", default="laneway.yaml")
    parser.add_argument("--since", default="7d", help="telemetry window, e.g. 24h, 7d (default)")
    parser.add_argument("--sample", type=int, default=2000, help="most recent calls replayed")
    parser.add_argument("--percentiles", default="90,99,99.9", help="timeout candidates")
    parser.add_argument("--client-deadline", type=parse_duration, help="overrides the lane's")
    parser.add_argument(
        "--margin", type=parse_duration, default=DEFAULT_MARGIN, help="kept under the deadline"
    )
    parser.add_argument("--check", action="store_true", help="fail on configured settings")
    parser.add_argument(
        "--max-cut", type=float, default=0.01, help="--check: share of answers a timeout may cut"
    )
    parser.add_argument(
        "--min-answered",
        type=float,
        default=0.9,
        help="--check: share of the recorded calls the settings must answer",
    )
    parser.add_argument("--measure", action="store_true", help="measure candidates live")
    parser.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="TIMEOUT/RETRIES",
        help="--measure: e.g. 8s/2 (repeat; default: the lane's current settings)",
    )
    parser.add_argument("--runs", type=int, default=2, help="--measure: runs per candidate")
    parser.add_argument("--max-calls", type=int, default=20, help="--measure: upstream requests")
    parser.add_argument(
        "--slow-upstream",
        type=parse_duration,
        metavar="SECONDS",
        help="--measure: a simulated upstream answering after SECONDS instead of the sources",
    )
    return parser


def _lanes(config: LanewayConfig, lane: str | None) -> list[str]:
    if lane is None:
        return list(config.lanes)
    if lane not in config.lanes:
        raise ConfigError(f"unknown lane {lane!r}; lanes: {', '.join(config.lanes)}")
    return [lane]


def _goal(lane: LaneConfig, ns: argparse.Namespace) -> Goal:
    client = ns.client_deadline if ns.client_deadline is not None else lane.client_deadline
    return Goal(client, ns.margin)


async def _recorded(
    config: LanewayConfig, base: Path, lanes: Sequence[str], since: float, sample: int
) -> dict[str, list[RecordedCall]]:
    store = store_for_url(config.telemetry.url, base)
    if store is None:
        raise ConfigError("telemetry is off (telemetry.url: none): nothing was recorded")
    if isinstance(store, SqliteTelemetryStore) and not store.path.exists():
        return {}
    await store.open()
    try:
        return {
            name: recorded_calls((await store.query_calls(since, name))[-sample:]) for name in lanes
        }
    finally:
        await store.close()


def _report(
    name: str,
    lane: LaneConfig,
    calls: list[RecordedCall],
    goal: Goal,
    percentiles: Sequence[float],
) -> None:
    if not calls:
        print(f"lane {name}: no recorded calls in that window; send traffic or use --measure")
        return
    print(evidence(name, calls, profiles(calls)))
    print()
    scores = [score(name, lane, calls, s, goal) for s in candidates(lane, calls, goal, percentiles)]
    pick = recommend(scores, goal) if any(s.answered for s in scores) else None
    print(candidates_table(scores, pick[0] if pick else None, goal))
    print()
    if not any(s.answered for s in scores):
        print(
            "no candidate would have answered any recorded call (each failed or was cut at its "
            "timeout or deadline): telemetry holds no answer time to size from, so no setting "
            f"is recommended; raise attempt_timeout and deadline, or run `laneway size {name} "
            "--measure --candidate TIMEOUT/RETRIES`"
        )
        return
    if pick is None:
        deadline = format_duration(goal.client_deadline or 0)
        print(
            f"no candidate fits client_deadline {deadline} less the margin; "
            "the upstream is too slow for this caller"
        )
    else:
        print(f"recommended: {pick[1]}")
        print(yaml_snippet(name, pick[0]))
    print()
    print("\n".join(hedge_lines(name, lane, calls)))
    print()


def _check(
    name: str,
    lane: LaneConfig,
    calls: list[RecordedCall],
    goal: Goal,
    bounds: tuple[float, float],
) -> int:
    """``bounds``: the share of answers a timeout may cut, the share of calls to answer."""
    max_cut, min_answered = bounds
    if not calls:
        print(f"lane {name}: no recorded calls in that window; not checked")
        return 0
    current = candidates(lane, [], goal)[0]
    result = score(name, lane, calls, current, goal)
    problems = []
    if goal.client_deadline is not None and (result.margin or 0) < goal.margin:
        problems.append(
            f"p99 wall {format_duration(result.p99_wall)} leaves "
            f"{format_duration(max(result.margin or 0, 0))} under client_deadline "
            f"{format_duration(goal.client_deadline)} (wanted {format_duration(goal.margin)}): "
            "lower attempt_timeout or retries"
        )
    if result.cut > max_cut:
        problems.append(
            f"attempt_timeout {format_duration(current.attempt_timeout)} cuts {result.cut:.1%} "
            f"of the answers telemetry saw (allowed {max_cut:.1%}): raise attempt_timeout "
            f"(see `laneway size {name}`)"
        )
    if result.answered < min_answered:
        problems.append(
            f"the current settings answer {result.answered:.1%} of the {len(calls)} recorded "
            f"calls replayed (wanted {min_answered:.1%}): see `laneway size {name}`"
        )
    for problem in problems:
        print(f"FAIL lane {name}: {problem}")
    if not problems:
        print(
            f"ok   lane {name}: p99 wall {format_duration(result.p99_wall)}, "
            f"{result.answered:.1%} answered, {result.cut:.1%} of answers cut, "
            f"{len(calls)} calls replayed"
        )
    return 1 if problems else 0


def _measure(
    ns: argparse.Namespace, config: LanewayConfig, environ: dict[str, str], name: str
) -> int:
    lane = config.lanes[name]
    try:
        settings = [_candidate(text, lane, ns) for text in ns.candidate] or [
            candidates(lane, [], _goal(lane, ns))[0]
        ]
    except ValueError as exc:
        print(f"error: --candidate: {exc}", file=sys.stderr)
        return 2
    results, sent = asyncio.run(_measured(ns, config, environ, name, settings))
    print(_measured_table(results, _goal(lane, ns)))
    print(f"sent {sent} upstream request(s) (--max-calls {ns.max_calls})")
    return 0


async def _measured(
    ns: argparse.Namespace,
    config: LanewayConfig,
    environ: dict[str, str],
    name: str,
    settings: list[CandidateSettings],
) -> tuple[list[Measured], int]:
    if ns.slow_upstream is None:
        return await measure(
            name,
            config,
            environ,
            settings,
            open_transport(),
            runs=ns.runs,
            max_calls=ns.max_calls,
        )
    from laneway.sim import start_in_thread

    with start_in_thread() as sim:
        lane = slow_sources(config.lanes[name], sim.base_url, ns.slow_upstream)
        slow = config.model_copy(update={"lanes": {**config.lanes, name: lane}})
        return await measure(
            name,
            slow,
            environ,
            settings,
            open_transport(),
            runs=ns.runs,
            max_calls=ns.max_calls,
        )


def _candidate(text: str, lane: LaneConfig, ns: argparse.Namespace) -> CandidateSettings:
    """``8s/2``: attempt_timeout 8 s, 2 retries; the deadline fits the caller as usual.

    With no client deadline, the lane's deadline is raised to the candidate's
    own worst case when shorter, so the candidate is measured as written
    (``5s/0`` on a 1 s lane was cut at 1 s).
    """
    timeout_text, _, retries_text = text.partition("/")
    timeout = parse_duration(timeout_text)
    retries = int(retries_text) if retries_text else lane.retries
    if retries < 0:
        raise ValueError(f"{text!r}: retries must be >= 0")
    goal = _goal(lane, ns)
    if goal.client_deadline is not None:
        deadline = goal.client_deadline - goal.margin
    else:
        trial = lane.model_copy(update={"attempt_timeout": timeout, "retries": retries})
        needed = retry_policy(trial).worst_case(trial.per_attempt, math.inf)
        deadline = max(lane.deadline, needed)
    return CandidateSettings(text, timeout, retries, deadline, first_byte_timeout_of(lane))


def _measured_table(results: Sequence[Measured], goal: Goal) -> str:
    head = [
        "candidate",
        "attempt_timeout",
        "retries",
        "deadline",
        "runs",
        "requests",
        "outcomes",
        "worst wall",
    ]
    if goal.client_deadline is not None:
        head.append(f"headroom vs client_deadline {format_duration(goal.client_deadline)}")
    rows = [head]
    for m in results:
        s = m.settings
        worst = m.worst
        row = [
            s.label,
            format_duration(s.attempt_timeout),
            str(s.retries),
            format_duration(s.deadline),
            str(len(m.walls)),
            str(m.requests),
            ", ".join(sorted(set(m.outcomes))) or (m.skipped or "-"),
            "-" if worst is None else f"{worst:.2f}s",
        ]
        if goal.client_deadline is not None:
            row.append("-" if worst is None else f"{goal.client_deadline - worst:+.2f}s")
        rows.append(row)
    return table(rows)
