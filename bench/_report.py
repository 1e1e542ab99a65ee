"""Shared helpers for benchmark scripts.

Benchmarks record their figures in ``docs/benchmarks.md`` so that numbers quoted in
design decisions can always be traced back to the exact command, date and machine
that produced them. Each benchmark owns one delimited block and rewrites only that
block, so benchmarks can be re-run independently without clobbering each other.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DOC = "docs/benchmarks.md"
_HEADING = "# Benchmarks\n"


def _markers(name: str) -> tuple[str, str]:
    """Return the begin/end HTML comments that delimit a section (invisible when rendered)."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"section name must be [A-Za-z0-9_.-]+, got {name!r}")
    return f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"


def write_section(name: str, markdown: str, path: str = DEFAULT_DOC) -> Path:
    """Replace the ``name`` block in the benchmarks doc, or append it if absent.

    ``path`` is relative to the repo root (not the CWD) so scripts behave the same
    wherever they are launched from. Returns the absolute path written.
    """
    begin, end = _markers(name)
    target = REPO_ROOT / path
    target.parent.mkdir(parents=True, exist_ok=True)
    text = target.read_text(encoding="utf-8") if target.exists() else _HEADING
    block = f"{begin}\n{markdown.strip()}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    if not text.endswith("\n"):
        text += "\n"
    target.write_text(text, encoding="utf-8")
    return target


def publish(name: str, markdown: str, scale: float) -> None:
    """Print the section; write it to the benchmarks doc only from a run at full scale."""
    if scale == 1.0:
        print(f"wrote {write_section(name, markdown)}")
    else:
        print("(scale != 1: not written to docs/benchmarks.md)")
    print(markdown)


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (same as numpy's default) without needing numpy."""
    if not values:
        raise ValueError("percentile of empty sequence")
    if not 0.0 <= pct <= 100.0:
        raise ValueError(f"pct must be within [0, 100], got {pct}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    lo = math.floor(rank)
    hi = math.ceil(rank)
    frac = rank - lo
    return ordered[lo] + (ordered[hi] - ordered[lo]) * frac


def median(values: Sequence[float]) -> float:
    """Median, used to summarise repeated rounds so one noisy round cannot skew a result."""
    return percentile(values, 50.0)


def machine_line() -> str:
    """When and where figures were measured: loopback numbers mean little without it."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cpu = _cpu_model()
    return (
        f"{now}; nproc={len(os.sched_getaffinity(0))}; {cpu}; "
        f"Python {platform.python_version()} ({platform.python_implementation()}); "
        f"{platform.system()} {platform.release()}"
    )


def _cpu_model() -> str:
    """Best-effort CPU model name, since core speed dominates loopback benchmark figures."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def provenance(command: str) -> str:
    """Markdown lines giving the command and machine, for the top of every section."""
    return f"Command: `{command}`  \nMeasured: {machine_line()}\n"
