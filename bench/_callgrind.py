"""Instructions a command executes (``valgrind --tool=callgrind``): repeatable on a busy host.

CPU time on a shared machine moves with the other jobs; an instruction count does not
(to within a few tenths of a percent run to run), so an A/B of two builds or of a
feature on and off holds on any host. The count covers the process itself (every
thread), not the processes it talks to or forks (laneway's price search may fork).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

_COLLECTED = re.compile(r"^==(\d+)== Collected : (\d+)$", re.MULTILINE)
_FIRST_PID = re.compile(r"^==(\d+)==", re.MULTILINE)


def instructions(cmd: list[str], env: Mapping[str, str]) -> int:
    """The total instructions of ``cmd``'s own process (its exit must be 0)."""
    with tempfile.TemporaryDirectory(prefix="callgrind-") as out:
        wrapped = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={Path(out) / 'cg.%p'}",
            *cmd,
        ]
        done = subprocess.run(
            wrapped,
            env={**env, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-400:]}")
    first = _FIRST_PID.search(done.stderr)
    totals = dict(_COLLECTED.findall(done.stderr))
    if first is None or first.group(1) not in totals:
        raise RuntimeError(f"no callgrind total in: {done.stderr.strip()[-400:]}")
    return int(totals[first.group(1)])  # the command's own process, not a child it forked


def per_call(cmd: list[str], env: Mapping[str, str], few: int, many: int) -> float:
    """Instructions per call: ``cmd`` (whose last argument is a call count) run with ``few``
    and ``many`` calls, the difference of the totals over the difference of the calls."""
    small = instructions([*cmd, str(few)], env)
    large = instructions([*cmd, str(many)], env)
    return (large - small) / (many - few)
