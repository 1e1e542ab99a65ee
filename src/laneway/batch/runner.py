"""``BatchJob``: runs a batch of items on a lane, in order, resumable, paced.

The items are cut into calls (the lane's upstream batch size on embed
lanes, one item per call on chat lanes) at fixed boundaries recorded in the
manifest, so a resumed job cuts them the same way. Calls run under a job
window that is AIMD like a source's: it grows by one per window's worth of
successes and halves on a 429 or a timeout, capped by ``max_concurrency``.
Inside the engine every call still passes the lane's quota gates and AIMD
pacers, and a Retry-After marks its source for every call of the job (the
engine's pushback), so the job waits instead of storming a limited source.

A call that spent its whole deadline waiting at the gate, without reaching
any upstream, cost nothing and failed nowhere: it goes back to the queue.
Only when nothing in the job has succeeded for ``stall_after`` does such a
call fail.

A run of ``stop_after`` calls failing alike in a way no retry can fix (a
pinned length the source does not answer, a refused key, an unknown model:
see ``laneway.batch.streak``) stops the job: it sends nothing more, waits
for the calls already sent, and raises ``BatchStopped`` saying why and what
to do. The calls that failed so are left out of the checkpoint, so the same
job run again after the fix sends them and every item not yet sent, and
nothing that was answered.

Results are yielded in input order as soon as the calls before them have
ended; at most ``REORDER_CALLS`` calls run ahead of the oldest unfinished
one, which bounds the results held in memory.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from laneway.batch.calls import CallMaker, Ended, RateSource, Work, failed, verdict
from laneway.batch.items import Item
from laneway.batch.jobdir import JobDir, Manifest
from laneway.batch.progress import Progress
from laneway.batch.results import ItemError, ItemResult, vector_problem
from laneway.batch.streak import STOP_AFTER, Held, Streak, unfixable
from laneway.batch.tally import Tally
from laneway.core.errors import BatchStopped, RequestInvalid
from laneway.engine.embedding import batch_size
from laneway.engine.gateway import Engine
from laneway.engine.structured import DEFAULT_REASKS
from laneway.policy.pacer import Pacer, PacerLimits

CHAT_CONCURRENCY = 16
"""Default job window on chat lanes (embed lanes default to ``batch_concurrency``)."""
REORDER_CALLS = 64
"""Calls that may run ahead of the oldest unfinished one (beyond the window)."""
TICK = 0.5
"""Seconds between progress reports while no call ends."""
STALL_AFTER = 300.0
"""Default: fail gate-bound calls once nothing in the job has succeeded this long."""

ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How a job runs. ``params`` go with every chat item (an item's own win)."""

    job_dir: Path | None = None
    max_concurrency: int | None = None
    retry_failures: bool = False
    params: Mapping[str, Any] = field(default_factory=dict)
    schema: type[BaseModel] | None = None
    reasks: int = DEFAULT_REASKS
    progress: ProgressFn | None = None
    stall_after: float = STALL_AFTER
    stop_after: int = STOP_AFTER


Running = dict[asyncio.Task[Ended], tuple[Work, float]]
"""Calls in flight: each task with its work and when it started."""


class BatchJob:
    """One batch job on a lane; iterate ``results()`` to run it."""

    def __init__(
        self,
        engine: Engine,
        lane_name: str,
        items: Sequence[Item],
        input_hash: str,
        prices: RateSource,
        options: BatchOptions,
    ) -> None:
        self.engine = engine
        # a schema's calls run on the lane alone; others may be served by its fallback_lanes
        resolve = engine.lane if options.schema is not None else engine.servable
        self.lane = resolve(lane_name)
        if self.lane.kind not in ("embed", "chat"):
            raise RequestInvalid(
                "lane", f"batches run on embed and chat lanes, not {self.lane.kind}"
            )
        if options.stop_after < 0:
            raise RequestInvalid("stop_after", "must be 0 (never stop) or more")
        if options.schema is not None and self.lane.kind != "chat":
            raise RequestInvalid("structured", "a schema applies to chat lanes only")
        self.items = list(items)
        self.options = options
        self.caller = CallMaker(
            engine, self.lane, prices, options.params, options.schema, options.reasks
        )
        self.tally = Tally()
        self.failures: list[ItemResult] = []
        manifest = self._manifest(input_hash)
        self.jobdir = JobDir.open(options.job_dir, manifest) if options.job_dir else None
        self.manifest = self.jobdir.manifest if self.jobdir else manifest
        self.dimension = self.manifest.dimension
        size = self.manifest.chunk_items
        self.calls = [self.items[start : start + size] for start in range(0, len(self.items), size)]
        self.resumed = 0
        cap = options.max_concurrency or self._default_concurrency()
        self.window = Pacer(PacerLimits(min=1, max=cap))
        self.started = time.monotonic()
        self.last_success = self.started
        self.streak = Streak(options.stop_after)
        self.kept_calls = set(self.jobdir.calls) if self.jobdir is not None else set()

    def _manifest(self, input_hash: str) -> Manifest:
        config = self.lane.config
        models = list(config.models)
        schema = self.options.schema.model_json_schema() if self.options.schema else None
        shape = {
            "kind": config.kind,
            "models": models,
            "dimensions": config.dimensions,
            "params": dict(self.options.params),
            "schema": schema,
            "reasks": self.options.reasks if schema else None,
        }
        digest = hashlib.sha256(orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)).hexdigest()
        size = batch_size(config, config.dimensions) if config.kind == "embed" else 1
        pinned = config.dimensions
        return Manifest(
            self.lane.name,
            config.kind,
            models,
            digest,
            input_hash,
            len(self.items),
            size,
            pinned,
            "pinned dimensions" if pinned else None,
        )

    def _default_concurrency(self) -> int:
        config = self.lane.config
        return config.batch_concurrency if config.kind == "embed" else CHAT_CONCURRENCY

    async def results(self) -> AsyncGenerator[ItemResult, None]:
        """Run the job; every item's result (or failure) in input order."""
        queue = deque(self._plan())
        planned = {work.call for work in queue}
        running: Running = {}
        ended: dict[int, list[ItemResult]] = {}
        try:
            for call in range(len(self.calls)):
                while call in planned and call not in ended:
                    self._dispatch(queue, running, call)
                    await self._collect(queue, running, ended)
                    if self.streak.stops:
                        raise await self._stop(running, ended)
                results = ended.pop(call) if call in planned else self._read(call)
                for result in results:
                    if not result.ok:
                        self.failures.append(result)
                    yield result
            self._checkpoint(self.streak.release())
            if self.jobdir is not None:
                self.jobdir.write_failures(self.failures)
            self._report(final=True)
        finally:
            await _cancel(running)
            if self.jobdir is not None:
                self.jobdir.close()

    def _plan(self) -> list[Work]:
        """The calls this run makes; counts what the checkpoint already holds."""
        done = self.jobdir.calls if self.jobdir is not None else {}
        plan = []
        for number, items in enumerate(self.calls):
            checkpointed = done.get(number)
            if checkpointed is None:
                plan.append(Work(number, items))
                continue
            retry = self.options.retry_failures and checkpointed.failed
            kept = [r for r in self._read(number) if r.ok or not retry]
            for result in kept:
                self.tally.add(result)
            self.resumed += len(kept)
            if retry:
                by_index = {item.index: item for item in items}
                plan.append(Work(number, [by_index[i] for i in checkpointed.failed], retry=True))
        return plan

    def _read(self, call: int) -> list[ItemResult]:
        assert self.jobdir is not None
        return self.jobdir.read(call)

    def _dispatch(
        self,
        queue: deque[Work],
        running: Running,
        oldest: int,
    ) -> None:
        """Start queued calls while the window has room and they are not too far ahead."""
        while queue and self.window.in_flight < self.window.slots:
            if queue[0].call - oldest > REORDER_CALLS + self.window.slots:
                return
            work = queue.popleft()
            self.window.take()
            task = asyncio.create_task(self.caller.run(work))
            running[task] = (work, time.monotonic())

    async def _collect(
        self,
        queue: deque[Work],
        running: Running,
        ended: dict[int, list[ItemResult]],
    ) -> None:
        """Wait for calls to end (or a tick), settle them, report progress."""
        if not running:
            raise RuntimeError("no call in flight while an unfinished call waits to start")
        finished, _ = await asyncio.wait(running, timeout=TICK, return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            work, started = running.pop(task)
            outcome = task.result()
            self.window.leave(verdict(outcome.attempts), started, time.monotonic())
            if outcome.gate_bound is not None and not self._stalled():
                queue.appendleft(work)
                continue
            ended[work.call] = self._settle(work, outcome)
        self._report()

    def _stalled(self) -> bool:
        return time.monotonic() - self.last_success > self.options.stall_after

    def _settle(self, work: Work, outcome: Ended) -> list[ItemResult]:
        """Verify, checkpoint and count one ended call; its full results in input order."""
        results = outcome.results
        if outcome.gate_bound is not None:
            results = [failed(item, work.call, outcome.gate_bound) for item in work.items]
        if self.lane.kind == "embed":
            results = self._verified(results)
        if any(r.ok for r in results):
            self.last_success = time.monotonic()
        for result in results:
            self.tally.add(result)
        failure = unfixable(results)
        if work.retry:
            kept = [r for r in self._read(work.call) if r.ok]
            results = sorted([*kept, *results], key=lambda r: r.index)
        self._checkpoint(self.streak.add(work.call, failure, results))
        return results

    def _checkpoint(self, calls: Held) -> None:
        for call, results in calls:
            self.kept_calls.add(call)
            if self.jobdir is not None:
                self.jobdir.append(call, results)

    async def _stop(self, running: Running, ended: dict[int, list[ItemResult]]) -> BatchStopped:
        """Send nothing more, keep the answers of the calls in flight; why the job stopped."""
        while running:
            await self._collect(deque(), running, ended)
        self._checkpoint(self.streak.release())
        unsent = len(self.items) - sum(len(self.calls[call]) for call in self.kept_calls)
        if self.jobdir is not None:
            self.jobdir.write_failures(self.jobdir.failed())
        self._report(final=True)
        return self.streak.stopped(unsent, len(self.items), resumable=self.jobdir is not None)

    def _verified(self, results: list[ItemResult]) -> list[ItemResult]:
        """Refuse vectors of the wrong length, with a NaN, or all zeros (see ``vector_problem``)."""
        checked = []
        for result in results:
            if not isinstance(result.output, list):
                checked.append(result)
                continue
            if self.dimension is None:
                self.dimension = len(result.output)
                if self.jobdir is not None:
                    self.jobdir.record_dimension(self.dimension)
            problem = vector_problem(result.output, self.dimension)
            if problem is None:
                checked.append(result)
                continue
            error = ItemError("vector_invalid", f"item {result.id!r}: embedding {problem}")
            checked.append(ItemResult(result.index, result.id, result.call, error=error))
        return _keep_call_usage(results, checked)

    def progress(self, final: bool = False) -> Progress:
        """Where the job stands now."""
        elapsed = time.monotonic() - self.started
        finished = self.tally.finished
        fresh = finished - self.resumed
        rate = fresh / elapsed if elapsed > 0 else 0.0
        left = len(self.items) - finished
        return Progress(
            done=self.tally.done,
            failed=self.tally.failed,
            total=len(self.items),
            resumed=self.resumed,
            elapsed=elapsed,
            rate=rate,
            eta=left / rate if rate > 0 else None,
            tokens=self.tally.provider_tokens + self.tally.estimated_tokens,
            unknown_calls=self.tally.unknown_calls,
            cost_usd=self.tally.priced_usd + self.tally.estimated_usd,
            unpriced_calls=self.tally.unpriced_calls + self.tally.usage_unknown_calls,
            concurrency=self.window.slots,
            in_flight=self.window.in_flight,
            final=final,
        )

    def __aiter__(self) -> AsyncIterator[ItemResult]:
        return self.results()

    def _report(self, final: bool = False) -> None:
        if self.options.progress is not None:
            self.options.progress(self.progress(final))


def _keep_call_usage(before: list[ItemResult], after: list[ItemResult]) -> list[ItemResult]:
    """Move the call's usage and cost to its first row still standing after verification."""
    owner = next((r for r in before if r.usage is not None or r.cost is not None), None)
    if owner is None or any(r is owner for r in after):
        return after
    heir = next((r for r in after if r.ok), None)
    if heir is not None:
        heir.usage, heir.cost = owner.usage, owner.cost
    return after


async def _cancel(running: Mapping[asyncio.Task[Ended], object]) -> None:
    """Cancel the calls still in flight and wait for them (no task outlives the job)."""
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
