"""Bounded concurrency with one failure rule: ``gather_bounded`` and ``run_bounded``.

The library's ``laneway.gather_bounded`` (awaitables) and the engine's
``run_bounded`` (an embedding call's upstream batches, as job factories) are
the same loop, so a caller sees one behaviour:

- at most ``limit`` run at once, started in input order, results in input order;
- by default the first failure (the first to happen, not the first in input
  order) cancels everything still running, nothing further is started, and
  the failure is raised as itself, not inside an ``ExceptionGroup``, so
  ``except DeadlineExceeded`` catches it; no call is left running behind it;
- with ``return_exceptions=True`` nothing is cancelled: every one runs and a
  failure takes its place in the results (as ``asyncio.gather`` does);
- cancelling the caller cancels every one still running;
- ``KeyboardInterrupt`` and ``SystemExit`` are never collected: they propagate.

Work is pulled from the input lazily, one item as a slot frees, so a
generator of a million coroutines keeps at most ``limit`` of them alive.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Sequence
from typing import Any, Literal, TypeVar, overload

T = TypeVar("T")
Job = Callable[[], Awaitable[T]]
"""One piece of work, started by calling it."""


@overload
async def run_bounded(
    jobs: Iterable[Job[T]], limit: int, *, return_exceptions: Literal[False] = False
) -> list[T]: ...


@overload
async def run_bounded(
    jobs: Iterable[Job[T]], limit: int, *, return_exceptions: Literal[True]
) -> list[T | Exception]: ...


@overload
async def run_bounded(
    jobs: Iterable[Job[T]], limit: int, *, return_exceptions: bool
) -> list[T] | list[T | Exception]: ...


async def run_bounded(
    jobs: Iterable[Job[T]], limit: int, *, return_exceptions: bool = False
) -> list[T] | list[T | Exception]:
    """Run ``jobs`` at most ``limit`` at a time; results in job order (rules: module docstring).

    A single job, or ``limit`` 1, runs in the caller's task: no task is made,
    and the raised failure keeps its ``__context__`` (the attempt failure
    behind an engine verdict) exactly as raised.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    workers = min(limit, len(jobs)) if isinstance(jobs, Sequence) else limit
    results: dict[int, Any] = {}
    work = enumerate(jobs)
    if workers <= 1:
        await _worker(work, results, return_exceptions)
    else:
        await _in_task_group(work, results, workers, return_exceptions)
    return [results[index] for index in range(len(results))]


@overload
async def gather_bounded(
    limit: int, awaitables: Iterable[Awaitable[T]], *, return_exceptions: Literal[False] = False
) -> list[T]: ...


@overload
async def gather_bounded(
    limit: int, awaitables: Iterable[Awaitable[T]], *, return_exceptions: Literal[True]
) -> list[T | Exception]: ...


@overload
async def gather_bounded(
    limit: int, awaitables: Iterable[Awaitable[T]], *, return_exceptions: bool
) -> list[T] | list[T | Exception]: ...


async def gather_bounded(
    limit: int, awaitables: Iterable[Awaitable[T]], *, return_exceptions: bool = False
) -> list[T] | list[T | Exception]:
    """Await ``awaitables`` with at most ``limit`` running at once; results in input order.

    By default the first failure cancels the rest and is raised as itself;
    with ``return_exceptions=True`` all run and failures are returned in
    place. The engine's embedding batches run by the same rules
    (``laneway.engine.bounded``). A generator is pulled one item per free
    slot; coroutines of a list (or other collection) that never started,
    because an earlier one failed, are closed, so none is left "never
    awaited"::

        replies = await laneway.gather_bounded(8, (lw.chat(lane, m) for m in prompts))
    """
    pending = awaitables if isinstance(awaitables, Collection) else ()
    started: set[int] = set()

    def job(index: int, awaitable: Awaitable[T]) -> Job[T]:
        def start() -> Awaitable[T]:
            started.add(index)
            return awaitable

        return start

    jobs = (job(index, awaitable) for index, awaitable in enumerate(awaitables))
    try:
        return await run_bounded(jobs, limit, return_exceptions=return_exceptions)
    finally:
        for index, awaitable in enumerate(pending):
            if index not in started:
                _discard(awaitable)


async def _in_task_group(
    work: Iterator[tuple[int, Job[Any]]],
    results: dict[int, Any],
    workers: int,
    return_exceptions: bool,
) -> None:
    """``workers`` tasks over ``work``; the first failure is raised out of the group.

    ``asyncio.TaskGroup`` wraps what its tasks raised in one group; the first
    entry is the first failure, raised here unwrapped (after the ``except``
    block, so its own ``__context__`` is not overwritten by the group).
    """
    failure: BaseException | None = None
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(_worker(work, results, return_exceptions))
    except BaseExceptionGroup as raised:
        failure = raised.exceptions[0]
    if failure is not None:
        raise failure


async def _worker(
    work: Iterator[tuple[int, Job[Any]]], results: dict[int, Any], return_exceptions: bool
) -> None:
    """Take the next job while there is one; its result (or failure) goes to its index."""
    for index, job in work:
        try:
            results[index] = await job()
        except Exception as exc:
            if not return_exceptions:
                raise
            results[index] = exc


def _discard(awaitable: Awaitable[Any]) -> None:
    """Release an awaitable that will never be awaited (a coroutine, a future, a task)."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    elif isinstance(awaitable, asyncio.Future):
        awaitable.cancel()
