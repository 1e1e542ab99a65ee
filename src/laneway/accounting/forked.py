"""Work done in a forked child process, so that its memory does not stay in this one.

Python rarely gives memory back to the system: a large data set loaded and
dropped again leaves its heap behind, partly free but still resident. Work
that needs such data for a moment (the price catalogue, see
``laneway.accounting.pricer``) runs in a child forked for it; the child
sends back only its (pickled) result and takes everything else with it
when it exits.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

T = TypeVar("T")


class ForkedWorkDied(RuntimeError):
    """The child exited without sending an answer (killed, or its answer would not pickle)."""


def can_fork() -> bool:
    """True where ``os.fork`` exists and no other thread runs in this process.

    Another thread may hold a lock at the instant of the fork (an import in
    progress, a log handler) that the child would then wait on for ever.
    """
    return hasattr(os, "fork") and threading.active_count() == 1


def run_forked(work: Callable[[], T]) -> T:
    """``work()``, computed in a forked child; an exception it raised is raised here.

    Call only when ``can_fork()``. The result (or the exception) must pickle.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _answer(work, write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        raise ForkedWorkDied(f"forked work exited without an answer (wait status {status})")
    done, value = cast(tuple[bool, Any], pickle.loads(payload))
    if not done:
        raise cast(BaseException, value)
    return cast(T, value)


def _answer(work: Callable[[], T], write_end: int) -> NoReturn:
    """In the child: run ``work``, send its outcome, and leave without running exit handlers.

    ``os._exit`` skips ``atexit`` and buffer flushing, which belong to the
    parent: the child must not print, close or clean up anything of the parent's.
    """
    status = 1
    try:
        try:
            outcome: tuple[bool, object] = (True, work())
        except Exception as exc:
            outcome = (False, exc)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(pickle.dumps(outcome))
        status = 0
    finally:
        os._exit(status)
