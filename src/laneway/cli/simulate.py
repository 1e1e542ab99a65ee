"""``laneway simulate [SCENARIO...] [--scale F]``: the chaos scenarios, in real time.

``laneway simulate --faults [FAULT...]`` runs the fault table instead (see
``laneway.cli.faults``): one primary fault per row, through a gateway.

Each named scenario runs against ``laneway sim`` (started in this process
unless ``--sim`` names a running one) and reports success rate, upstream
429s and attempts per success, p50/p99 latency and deadline overruns, with
its targets met or not. All scenarios run at once; at the default scale the
whole set takes about 2.5 minutes. ``--scale 0.05`` runs it in seconds, but
the 60 s ``rpm`` windows do not shrink, so the throttling targets (1 and 5)
mean something only at scale 1.

The scenarios read time from the library's engine clock
(``laneway.chaos.load``); this command runs them on the system clock.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from laneway.chaos.fault_report import fault_table
from laneway.chaos.report import as_json, text_table
from laneway.chaos.runner import DEFAULT_STATE_URL, run_all
from laneway.chaos.scenarios import KEYS, Scenario, build, select
from laneway.cli.faults import run_faults, select_faults
from laneway.sim import FAULTS, FaultScenario, start_in_thread


def parser() -> argparse.ArgumentParser:
    """The ``laneway simulate`` arguments."""
    p = argparse.ArgumentParser(
        prog="laneway simulate",
        description="Run chaos scenarios against the loopback simulator and report them.",
    )
    p.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO",
        help=f"names or numbers: {', '.join(KEYS)}; with --faults, fault names: "
        + ", ".join(s.key for s in FAULTS),
    )
    p.add_argument(
        "--faults",
        action="store_true",
        help="run the fault table (a primary's faults, a fallback, streamed calls via a gateway)",
    )
    p.add_argument("--scale", type=float, default=1.0, help="multiply every duration (default 1)")
    p.add_argument("--sim", help="URL of a running `laneway sim` (default: start one here)")
    p.add_argument(
        "--state-url",
        default=DEFAULT_STATE_URL,
        help="Redis shared by the replicas of scenario 5 (default: %(default)s)",
    )
    p.add_argument("--json", type=Path, help="also write every figure to this file")
    return p


def main(argv: Sequence[str]) -> int:
    """Run ``laneway simulate``; returns the exit status (0 even when a target is missed)."""
    args = parser().parse_args(argv)
    try:
        job = _job(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.sim is not None:
        return job(args.sim.rstrip("/"))
    with start_in_thread() as sim:
        return job(sim.base_url)


def _job(args: argparse.Namespace) -> Callable[[str], int]:
    """What to run against a sim's URL: the fault table or the chosen chaos scenarios."""
    if args.scale <= 0:
        raise ValueError("--scale must be positive")
    if args.faults:
        return functools.partial(_run_faults, select_faults(args.scenarios), args=args)
    scenarios = select(build(args.scale, secrets.token_hex(4)), args.scenarios)
    return functools.partial(_run, scenarios, args=args)


def _run_faults(faults: list[FaultScenario], sim_url: str, args: argparse.Namespace) -> int:
    print(
        f"fault table at scale {args.scale:g} against {sim_url}: {len(faults)} row(s)", flush=True
    )
    rows = asyncio.run(
        run_faults(faults, sim_url, args.scale, functools.partial(print, flush=True))
    )
    print(fault_table(rows))
    if args.json is not None:
        figures = {"scale": args.scale, "rows": [row.as_json() for row in rows]}
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


def _run(scenarios: list[Scenario], sim_url: str, args: argparse.Namespace) -> int:
    titles = "\n".join(f"  {s.number} {s.key}: {s.title}" for s in scenarios)
    print(f"running at scale {args.scale:g} against {sim_url}:\n{titles}", flush=True)
    outcomes = asyncio.run(run_all(scenarios, sim_url, args.state_url))
    print(text_table(outcomes))
    if args.json is not None:
        args.json.write_text(json.dumps(as_json(outcomes), indent=2) + "\n", encoding="utf-8")
    return 0
