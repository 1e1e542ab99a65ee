"""``gather_bounded`` and ``run_bounded``: one set of rules, checked on both.

Each rule is run through both entry points (``RUNNERS``): the library's
``laneway.gather_bounded`` over awaitables and the engine's ``run_bounded``
over job factories. Jobs are ordered by events, never by timing.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import pytest

import laneway
from laneway.engine.bounded import run_bounded

Job = Callable[[], Coroutine[Any, Any, Any]]
Runner = Callable[..., Coroutine[Any, Any, list[Any]]]


async def via_gather(limit: int, jobs: Sequence[Job], return_exceptions: bool = False) -> list[Any]:
    awaitables = [job() for job in jobs]
    return await laneway.gather_bounded(limit, awaitables, return_exceptions=return_exceptions)


async def via_run(limit: int, jobs: Sequence[Job], return_exceptions: bool = False) -> list[Any]:
    return await run_bounded(jobs, limit, return_exceptions=return_exceptions)


RUNNERS = pytest.mark.parametrize("run", [via_gather, via_run], ids=["gather", "run"])


class Boom(Exception):
    """A job's own failure."""


class Tracker:
    """Jobs that record starts, ends and cancellations; ``hold`` ones wait on ``release``."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.finished: list[int] = []
        self.cancelled: list[int] = []
        self.running = 0
        self.peak = 0
        self.release = asyncio.Event()
        self.change = asyncio.Condition()

    async def until_running(self, count: int) -> None:
        """Return once ``count`` jobs run at the same time."""
        async with self.change:
            await self.change.wait_for(lambda: self.running >= count)

    def job(self, index: int, *, hold: bool = False, fail: bool = False) -> Job:
        async def body() -> int:
            self.started.append(index)
            self.running += 1
            self.peak = max(self.peak, self.running)
            async with self.change:
                self.change.notify_all()
            try:
                await asyncio.sleep(0)
                if hold:
                    await self.release.wait()
                if fail:
                    raise Boom(f"job {index}")
            except asyncio.CancelledError:
                self.cancelled.append(index)
                raise
            finally:
                self.running -= 1
            self.finished.append(index)
            return index

        return body


@RUNNERS
async def test_at_most_limit_run_at_once_and_results_keep_input_order(run: Runner) -> None:
    tracker = Tracker()

    async def released_when_three_run() -> None:
        await tracker.until_running(3)
        tracker.release.set()

    opener = asyncio.create_task(released_when_three_run())
    jobs = [tracker.job(i, hold=True) for i in range(10)]
    assert await run(3, jobs) == list(range(10))
    await opener
    assert tracker.peak == 3
    assert tracker.started == list(range(10))


@RUNNERS
async def test_the_first_failure_is_raised_as_itself_and_cancels_the_rest(run: Runner) -> None:
    tracker = Tracker()
    jobs = [tracker.job(0, hold=True), tracker.job(1, fail=True), tracker.job(2), tracker.job(3)]
    with pytest.raises(Boom, match="job 1"):
        await run(2, jobs)
    assert tracker.cancelled == [0]
    assert tracker.started == [0, 1]
    assert tracker.running == 0


@RUNNERS
async def test_with_return_exceptions_all_run_and_failures_take_their_place(run: Runner) -> None:
    tracker = Tracker()
    jobs = [tracker.job(0), tracker.job(1, fail=True), tracker.job(2), tracker.job(3, fail=True)]
    results = await run(2, jobs, return_exceptions=True)
    assert results[0] == 0 and results[2] == 2
    assert [type(results[1]), type(results[3])] == [Boom, Boom]
    assert str(results[3]) == "job 3"
    assert tracker.cancelled == []


@RUNNERS
@pytest.mark.parametrize("limit", [1, 3])
async def test_the_raised_failure_keeps_its_context(run: Runner, limit: int) -> None:
    """The engine's verdicts carry the attempt failure behind them as ``__context__``."""

    async def chained() -> None:
        try:
            raise KeyError("the attempt's failure")
        except KeyError:
            raise Boom("the verdict")  # noqa: B904 (the implicit context is the point)

    with pytest.raises(Boom) as caught:
        await run(limit, [chained, Tracker().job(1)])
    assert isinstance(caught.value.__context__, KeyError)


@RUNNERS
async def test_cancelling_the_caller_cancels_every_running_job(run: Runner) -> None:
    tracker = Tracker()
    task = asyncio.create_task(run(2, [tracker.job(i, hold=True) for i in range(4)]))
    await tracker.until_running(2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(tracker.cancelled) == [0, 1]
    assert tracker.started == [0, 1]


@RUNNERS
async def test_a_limit_below_one_is_refused(run: Runner) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        await run(0, [])


@RUNNERS
async def test_no_jobs_give_no_results(run: Runner) -> None:
    assert await run(4, []) == []


async def test_gather_closes_the_coroutines_it_never_started() -> None:
    tracker = Tracker()
    coroutines = [tracker.job(0, fail=True)(), tracker.job(1)(), tracker.job(2)()]
    with pytest.raises(Boom):
        await laneway.gather_bounded(1, coroutines)
    assert [inspect.getcoroutinestate(c) for c in coroutines[1:]] == [inspect.CORO_CLOSED] * 2
    assert tracker.started == [0]


async def test_gather_pulls_a_generator_one_item_per_free_slot() -> None:
    tracker = Tracker()
    made: list[int] = []

    def coroutines() -> Any:
        for index in range(100):
            made.append(index)
            yield tracker.job(index, hold=True)()

    task = asyncio.create_task(laneway.gather_bounded(2, coroutines()))
    await tracker.until_running(2)
    assert made == [0, 1]
    tracker.release.set()
    assert await task == list(range(100))
