"""The ``faults`` section of docs/benchmarks.md: laneway and LiteLLM's proxy, row by row."""

from __future__ import annotations

import subprocess

from _report import provenance
from laneway.chaos.fault_report import RowResult
from laneway.chaos.faults import EXPECTED, POLICY

COMMAND = ".venv/bin/python bench/faults_litellm.py"

HOW = f"""\
One `laneway sim` plays every row's primary and fallback for both clients,
LiteLLM's half first, then laneway's (specs unique to each, so no counter is
shared). Each row makes one streamed call (`stream_options.include_usage`);
the rows run one after another, beside the flapping row's 20 calls 4 s apart,
so no row's time carries another's load; a primary that breaks off
mid-answer sends a word every 10 ms, so its first 40 words reach the caller
before the break. Both clients are called by the same client code and
judged by the same rules
(`laneway.chaos.faults`): whose words the caller got (each upstream names
itself in its chunks' `model`), the whole answer closed by `[DONE]` with a
usage chunk, requests per upstream counted at the sim, and the time to the
end of the answer (0.5 s slack). laneway alone: `.venv/bin/laneway simulate
--faults` prints the same table.

The lane (both clients): retries {POLICY.retries} on 429, 5xx, timeout and
connect; exponential backoff ({POLICY.backoff_base:g} s base, full jitter);
attempt_timeout {POLICY.attempt_timeout:g} s; first_byte_timeout and
idle_timeout {POLICY.first_byte_timeout:g} s; deadline {POLICY.deadline:g} s;
a priority-0 primary and a priority-1 fallback. LiteLLM's proxy gets the
primary and the fallback as two model groups with `fallbacks` and
`context_window_fallbacks` from one to the other, `num_retries` and a
`retry_policy` (429, 5xx and timeouts retried, 400s not), `timeout` = the
attempt timeout, `stream_timeout` = the first-byte/idle timeout,
`allowed_fails`/`cooldown_time` = the breaker. It has no whole-call deadline
and no mid-stream continuation. Both make a warm-up call first.
"""

HEADER = (
    "fault on the primary",
    "what the caller must get",
    "client",
    "caller got",
    "requests primary / fallback",
    "time",
    "verdict",
)


def render(ours: list[RowResult], theirs: list[RowResult], scale: float, litellm: str) -> str:
    """The whole section."""
    met_ours, met_theirs = sum(r.met for r in ours), sum(r.met for r in theirs)
    lines = [
        "## Fault table: laneway vs LiteLLM's proxy",
        "",
        provenance(COMMAND),
        f"{litellm}, laneway at {_tree()}. Scale {scale:g} (1: the issue's real times).",
        "",
        HOW,
        f"Rows met: laneway {met_ours} of {len(ours)}, LiteLLM {met_theirs} of {len(theirs)}.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|---|---|---|---|---:|---:|---|",
    ]
    for mine, other in zip(ours, theirs, strict=True):
        must = EXPECTED[mine.scenario.key].must_get
        lines.append(_row(mine.scenario.fault, must, "laneway", mine))
        lines.append(_row("", "", "LiteLLM", other))
    misses = [
        (name, row)
        for name, rows in (("laneway", ours), ("LiteLLM", theirs))
        for row in rows
        if not row.met
    ]
    if misses:
        lines += ["", "Checks missed:", ""]
        lines += [
            f"- {name}, {row.scenario.fault}: {'; '.join(row.missed())}" for name, row in misses
        ]
    return "\n".join(lines)


def _row(fault: str, must: str, client: str, row: RowResult) -> str:
    cells = [fault, must, client, row.outcome(), row.requests(), row.time(), row.verdict()]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _tree() -> str:
    """The commit laneway ran from (with ``+`` when the work tree had changes)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{head or 'unknown'}{'+' if dirty else ''}"
