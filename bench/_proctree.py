"""CPU time and resident memory of a server *and everything it forked*, read from /proc.

A gateway's cost is not only its master process: uvicorn or gunicorn workers, nginx
workers and helper processes all spend CPU and hold memory on its behalf. Summing over
the process tree (by parent pid, not by process group, so that a child which calls
``setsid`` is still counted) charges each server for all of it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

_PROC = Path("/proc")
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    """Fields of /proc/<pid>/stat after the ``(comm)``, which may itself hold spaces."""
    text = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    return text.rsplit(")", 1)[1].split()


def _parents() -> dict[int, int]:
    """pid -> ppid for every live process (vanishing processes are skipped)."""
    parents: dict[int, int] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
    return parents


def tree(root: int) -> list[int]:
    """``root`` and all of its live descendants."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_seconds(root: int) -> float:
    """utime + stime of the tree so far, in seconds (a cumulative counter: diff two reads)."""
    ticks = 0
    for pid in tree(root):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = _stat_fields(pid)
            ticks += int(fields[11]) + int(fields[12])  # stat fields 14 and 15
    return ticks / _TICKS_PER_S


def rss_mib(root: int) -> float:
    """Sum of VmRSS over the tree in MiB (shared pages count once per process, as ps shows)."""
    kib = 0
    for pid in tree(root):
        with contextlib.suppress(OSError, ValueError):
            for line in (_PROC / str(pid) / "status").read_text(encoding="ascii").splitlines():
                if line.startswith("VmRSS:"):
                    kib += int(line.split()[1])
    return kib / 1024


def pss_mib(root: int) -> float:
    """Sum of Pss over the tree in MiB: each shared page split among the processes sharing it.

    What the tree costs the machine: forked workers that share their parent's
    pages count them once in all, where VmRSS counts them once per process.
    """
    kib = 0
    for pid in tree(root):
        with contextlib.suppress(OSError, ValueError):
            for line in (
                (_PROC / str(pid) / "smaps_rollup").read_text(encoding="ascii").splitlines()
            ):
                if line.startswith("Pss:"):
                    kib += int(line.split()[1])
    return kib / 1024
