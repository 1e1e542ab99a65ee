"""Work in a forked child: its answer comes back, its failures are raised here."""

from __future__ import annotations

import os
import threading
from typing import NoReturn

import pytest

from laneway.accounting.forked import ForkedWorkDied, can_fork, run_forked

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # The test session runs the simulator on a thread; this work takes no lock.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

_TOUCHED: list[str] = []


def _touch_and_answer() -> tuple[int, list[str]]:
    _TOUCHED.append("child")
    return os.getpid(), list(_TOUCHED)


def _refuse() -> NoReturn:
    raise ValueError("no such model")


def test_the_answer_comes_back_and_the_childs_state_stays_there() -> None:
    pid, touched = run_forked(_touch_and_answer)
    assert pid != os.getpid()
    assert touched == ["child"]
    assert _TOUCHED == []


def test_an_exception_in_the_child_is_raised_here() -> None:
    with pytest.raises(ValueError, match="no such model"):
        run_forked(_refuse)


def test_a_child_that_exits_without_answering_is_reported() -> None:
    with pytest.raises(ForkedWorkDied, match="without an answer"):
        run_forked(lambda: os._exit(3))


def test_an_answer_that_does_not_pickle_is_reported() -> None:
    with pytest.raises(ForkedWorkDied):
        run_forked(lambda: threading.Lock())


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
    finally:
        stop.set()
        thread.join()
