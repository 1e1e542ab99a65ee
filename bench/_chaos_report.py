"""The ``chaos`` section of docs/benchmarks.md: laneway and LiteLLM, scenario by scenario."""

from __future__ import annotations

from typing import Any

from _report import provenance
from laneway.chaos.report import HEADER, cells, scenario_verdict, target_lines
from laneway.chaos.runner import ScenarioOutcome

COMMAND = ".venv/bin/python bench/chaos_litellm.py"

HOW = """\
Each scenario runs in real time against one `laneway sim`, all clients at once
(specs unique per run, so no rate bucket or counter is shared). Attempts and
429s are counted at the upstream, from the sim's hit log (each hit's status
replayed from the sim's rules), so a client that hides its retries is counted
like one that reports them. Latencies are over every call, failed ones
included; an overrun is a call that ended over 50 ms after the scenario's
deadline. laneway alone: `.venv/bin/laneway simulate` (same scenarios, same table).

Configuration, as a demanding user would write it, from the same values
(`laneway.chaos.scenarios`): laneway lanes state deadline, attempt_timeout,
retries, retry_on (429, 5xx, timeout, connect), exponential backoff with full
jitter and the breaker; sources declare `rpm` where the user knows the cap
(scenario 1: 10 each, a third of the shared 30 rpm account cap; scenario 5:
60, shared through Redis). LiteLLM's Router gets the three deployments as one
model group with the same `rpm`, `num_retries` = retries, `timeout` = the
attempt timeout, `allowed_fails`/`cooldown_time` = the breaker, and
`enable_pre_call_checks` where `rpm` is declared (its rpm filter runs only
then); scenario 5 runs two Router processes with `redis_host`/`redis_port`.
LiteLLM has no whole-call deadline, so its overruns are counted against the
same deadline the laneway lane enforces. Scenarios 6 and 7 are one long tail
(a source answering one call in twenty after 5 s, beside a steady one) without
and with laneway's `hedge: {after: 200ms}`; LiteLLM has no hedge, so it runs
7 as 6, and its p99 there is what a gateway without hedging gives. Each LiteLLM process makes one
warm-up call first (its first call takes seconds of lazy imports). Figures
are from one run, not medians of rounds: scenario 2 (where the flap phase
falls) and LiteLLM's random picks move by a point or two between runs.

These scenarios found two engine defects, fixed before this run: a quota
slot reused exactly one window later reached the sim 3-12 ms before the
sim's window let go of it (429s in scenarios 1 and 5), so reservations are
now held 1 s past the window; and a deadline cancel swallowed by Python
3.11's `wait_for` inside redis-py let a scenario-5 call queue 56-74 s past
its 30 s deadline, so the call loop now also checks the deadline after each
pick.
"""


def render(
    ours: list[dict[str, Any]], litellm: dict[str, list[ScenarioOutcome]], scale: float
) -> str:
    """The whole section."""
    lines = [
        "## Chaos scenarios: laneway vs LiteLLM Router",
        "",
        provenance(COMMAND),
        f"LiteLLM 1.96.2. Scale {scale:g} (1: the durations of issue 4).",
        "",
        HOW,
        *_summary(ours, litellm),
        "",
        "| " + " | ".join((HEADER[0], "client", *HEADER[1:])) + " |",
        "|---|---|" + "---:|" * (len(HEADER) - 2) + "---|",
    ]
    for index, entry in enumerate(ours):
        name, *figures = entry["cells"]
        lines.append(_row(name, "laneway", figures))
        for strategy, outcomes in litellm.items():
            _, *theirs = cells(outcomes[index])
            lines.append(_row("", f"LiteLLM {strategy}", theirs))
    lines += ["", "Targets, and how the failed calls ended:", ""]
    for index, entry in enumerate(ours):
        lines.append(f"- **{entry['number']} {entry['scenario']}**: {entry['title']}")
        lines += [f"  - laneway: {line}" for line in entry["lines"]]
        for strategy, outcomes in litellm.items():
            lines += [f"  - LiteLLM {strategy}: {line}" for line in target_lines(outcomes[index])]
    return "\n".join(lines) + "\n"


def _summary(ours: list[dict[str, Any]], litellm: dict[str, list[ScenarioOutcome]]) -> list[str]:
    """One line per client: the scenarios whose targets were all met."""
    met = [e["number"] for e in ours if e["cells"][-1] == "met"]
    lines = [f"Scenarios with every target met: laneway {_listed(met, len(ours))}"]
    for strategy, outcomes in litellm.items():
        theirs = [o.scenario.number for o in outcomes if scenario_verdict(o) == "met"]
        lines.append(f"; LiteLLM {strategy} {_listed(theirs, len(outcomes))}")
    return ["".join(lines) + "."]


def _listed(numbers: list[int], total: int) -> str:
    return f"{len(numbers)} of {total} ({', '.join(map(str, numbers)) or 'none'})"


def _row(name: str, client: str, figures: list[str]) -> str:
    return "| " + " | ".join((name, client, *figures)) + " |"
