"""Two or more servers under the same wrk load in alternating rounds: req/s and CPU a request.

Alternating rounds (A, B, A, B, ...) and medians let a shared, noisy host
compare servers fairly: a slow spell lands on both, not on whichever ran
second. Used by ``transport_ab.py`` (two upstream clients) and
``checkout_ab.py`` (two checkouts of laneway).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import _wrk
from _procs import Proc
from _report import median, provenance, write_section

Server = tuple[Proc, int]
"""A started server and its port."""


def cpu_seconds(pid: int) -> float:
    """User and system CPU of process ``pid``, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alternate(
    servers: Mapping[str, Server], script: str, path: str, rounds: int, load_cpu: int
) -> dict[str, dict[str, float]]:
    """Each server's median c=32 req/s and CPU µs a request over ``rounds``, then its c=1 p50.

    Each round gives each server a 1 s warm-up and 5 s measured at c=32; a
    non-2xx answer or a socket error stops the run (a fast error is not a figure).
    """
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for number in range(rounds):
        for name, (proc, port) in servers.items():
            _wrk.run(script, port, path, 32, 1, load_cpu)
            before = cpu_seconds(proc.popen.pid)
            run = _wrk.run(script, port, path, 32, 5, load_cpu)
            spent = cpu_seconds(proc.popen.pid) - before
            if run.failed:
                raise RuntimeError(f"{name}: {run.non2xx} non-2xx, {run.errors} errors")
            seen[name].append((run.requests / run.duration_s, spent / run.requests * 1e6))
        print(f"round {number + 1}: {dict((n, r[-1]) for n, r in seen.items())}", flush=True)
    figures = {}
    for name, (_, port) in servers.items():
        single = _wrk.run(script, port, path, 1, 5, load_cpu)
        figures[name] = {
            "rps": median([rps for rps, _ in seen[name]]),
            "cpu_us": median([cpu for _, cpu in seen[name]]),
            "p50_us": single.p50_us,
        }
    return figures


def table(figures: Mapping[str, Mapping[str, float]], label: str, against: str) -> list[str]:
    """The figures as Markdown rows, each ratio against the first row (named ``against``)."""
    base = next(iter(figures.values()))
    lines = [
        f"| {label} | c=32 req/s | vs {against} | CPU µs/request | vs {against} | c=1 p50 µs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in figures.items():
        lines.append(
            f"| {name} | {row['rps']:,.0f} | {row['rps'] / base['rps']:.2f}× | "
            f"{row['cpu_us']:,.0f} | {row['cpu_us'] / base['cpu_us']:.2f}× | {row['p50_us']:,.0f} |"
        )
    return lines


def section(
    title: str,
    command: str,
    setting: str,
    figures: Mapping[str, Mapping[str, float]],
    label: str,
    against: str,
) -> str:
    """A ``docs/benchmarks.md`` section: heading, provenance, ``setting``, the table (``table``)."""
    lines = [f"## {title}", provenance(command), setting, "", *table(figures, label, against)]
    return "\n".join(lines)


def publish(name: str, markdown: str, write: bool) -> None:
    """Print the section, and write it to ``docs/benchmarks.md`` unless told not to."""
    print(markdown)
    if write:
        write_section(name, markdown)
