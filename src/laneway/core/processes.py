"""Whether a process is alive: for files a process leaves behind (spools, status files)."""

from __future__ import annotations

import os


def running(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: signalling it is refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
