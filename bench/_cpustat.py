"""Whole-machine CPU use from /proc/stat, to see (and wait out) other people's work.

This box is shared: other engineers' test runs land on the same two cores and can
halve a gateway's throughput for a round. Measuring the CPU used by processes that
are *not* ours during each run makes such noise visible in the report instead of
silently skewing a median, and a short wait for quiet before each round avoids most
of it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """CPU seconds all cores spent not idle since boot (steal included: it was not ours)."""
    line = Path("/proc/stat").read_text(encoding="ascii").splitlines()[0]
    fields = [int(x) for x in line.split()[1:9]]  # user nice system idle iowait irq softirq steal
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / _TICKS_PER_S


def wait_quiet(max_s: float, threshold_cores: float = 0.15, window_s: float = 0.5) -> float:
    """Wait until the machine is nearly idle (or ``max_s`` passed); return seconds waited.

    Called between runs, when none of our servers is under load, so any busy CPU
    belongs to someone else.
    """
    started = time.monotonic()
    while True:
        before = busy_seconds()
        time.sleep(window_s)
        if (busy_seconds() - before) / window_s < threshold_cores:
            break
        if time.monotonic() - started >= max_s:
            break
    return time.monotonic() - started
