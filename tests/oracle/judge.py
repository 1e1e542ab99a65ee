"""What every run must hold to, whatever the case: the oracle's assertions.

The bound and the walk are ``laneway check``'s own (``request_bound`` and
``failing_walks`` of ``laneway.cli.check``), never derived here. Times are
virtual and exact but sums of float waits, so they are read to ``GRAIN``.
"""

from __future__ import annotations

import random
import re

from laneway.app.policies import retry_policy
from laneway.cli.check import failing_walks, request_bound
from laneway.config.models import LaneConfig
from laneway.core.errors import CallFailed, DeadlineExceeded, PushbackRefused
from laneway.core.failures import SET_ASIDE
from laneway.core.records import CallRecord
from tests.oracle.cases import MAIN, Case
from tests.oracle.runner import Call
from tests.oracle.upstream import Exchange

GRAIN = 1e-6
"""Seconds a virtual time may be off by: a sum of float waits (forty 0.01 s waits read
0.39999999999999997 s)."""
_STATUS = re.compile(r"^status=(\d+)$")


def chain(case: Case) -> list[str]:
    """The lanes a call of the main lane may run, in order."""
    return case.config.fallback_chain(MAIN)


def bound(lane: LaneConfig) -> int:
    """``laneway check``'s most upstream requests of one call of ``lane``."""
    return request_bound(lane, retry_policy(lane)).total


def chain_bound(case: Case) -> int:
    """The most upstream requests of one call down the main lane's chain: each lane's bound."""
    return sum(bound(case.config.lanes[name]) for name in chain(case))


def hold_requests(case: Case, exchanges: list[Exchange]) -> None:
    """No lane makes more upstream requests than ``check`` says, nor the chain."""
    assert len(exchanges) <= chain_bound(case), (len(exchanges), chain_bound(case))
    for name in chain(case):
        mine = [e for e in exchanges if e.source in case.sources(name)]
        assert len(mine) <= bound(case.config.lanes[name]), (name, len(mine))


def walk_kind(lane: LaneConfig, specs: set[str], walks: dict[str, list[str]]) -> str | None:
    """Which of ``check``'s ``walks`` a lane whose every answer is one of ``specs`` takes.

    Only where every answer fails alike: all statuses the lane retries (all
    429s where ``check`` has a walk of its own for them, a 429 counting for no
    breaker), or all refused connections (``reset``); ``None`` otherwise.
    """
    labels = {str(label) for label in lane.retry_on}
    statuses = {m.group(1) for spec in specs if (m := _STATUS.match(spec))}
    if statuses and len(statuses) == len(specs) and statuses <= labels:
        if "a 429" not in walks:
            return "an error status"
        return "a 429" if statuses == {"429"} else None if "429" in statuses else "an error status"
    if specs == {"reset"} and "connect" in labels and "connect" in SET_ASIDE:
        return "a timeout or refused connection"
    return None


def hold_walk(case: Case, exchanges: list[Exchange], drawn: list[tuple[int, float]]) -> None:
    """Where a lane's every answer fails alike, its sources are tried in ``check``'s walk.

    ``check``'s walk models each source's breaker. It takes each backoff at
    its longest, and states the walk at the shortest too where jitter may
    change it; a jittered lane is held to ``check``'s walk at the backoffs its
    jitter drew (``drawn``: each number the engine drew, after how many of
    ``exchanges``), which lie between the two.
    """
    for name in chain(case):
        lane = case.config.lanes[name]
        sources = case.sources(name)
        policy = retry_policy(lane)
        backoffs = _drawn_backoffs(lane, exchanges, drawn, sources)
        walks = dict(failing_walks(lane, policy, backoffs))
        kind = walk_kind(lane, {spec for s in sources for spec in case.faults[s]}, walks)
        if kind is None or kind not in walks:
            continue
        tried = [e.source for e in exchanges if e.source in sources]
        assert tried == walks[kind][: len(tried)], (name, kind, tried, walks[kind], backoffs)


def _drawn_backoffs(
    lane: LaneConfig, exchanges: list[Exchange], drawn: list[tuple[int, float]], sources: list[str]
) -> list[float] | None:
    """The backoffs ``lane``'s jitter drew, in order (``None``: no jitter, the longest)."""
    if lane.backoff.jitter == "none":
        return None
    mine = [
        value
        for made, value in drawn
        if 0 < made <= len(exchanges) and exchanges[made - 1].source in sources
    ]
    backoff = retry_policy(lane).backoff
    numbers = _Replayed(mine)
    return [backoff.delay(retry, numbers) for retry in range(1, len(mine) + 1)]


class _Replayed(random.Random):
    """Gives back numbers drawn before, in order."""

    def __init__(self, values: list[float]) -> None:
        self.values = iter(values)
        super().__init__(0)

    def random(self) -> float:
        return next(self.values)


def lane_of(case: Case, record: CallRecord) -> LaneConfig:
    return case.config.lanes[record.lane]


def hold_time(case: Case, records: list[CallRecord], elapsed: float) -> None:
    """Each lane's run ends by its deadline, and the call by the chain's."""
    assert elapsed <= sum(case.config.lanes[n].deadline for n in chain(case)) + GRAIN
    for record in records:
        assert record.latency <= lane_of(case, record).deadline + GRAIN, record


def hold_gate_waits(case: Case, records: list[CallRecord]) -> None:
    """No lane waits on a local gate beyond what fits; a deadline is blamed only where it cut.

    A lane's run spends its time in its attempts and the waits between them
    (each attempt's ``waited``): time left over at its end is a wait no
    attempt followed, which must end by the deadline less ``min_attempt``.
    ``DeadlineExceeded`` is the verdict only when the deadline cut an attempt,
    or when no upstream failure happened to name instead.
    """
    for record in records:
        lane = lane_of(case, record)
        tail = record.latency - sum(a.elapsed + a.waited for a in record.attempts)
        cut = bool(record.attempts) and record.attempts[-1].outcome == "deadline"
        if tail > GRAIN and not cut:
            assert record.latency <= lane.deadline - lane.min_attempt + GRAIN, record
        if record.error == DeadlineExceeded.code:
            assert cut or not record.attempts, ("a deadline blamed for a wait", record)


def hold_should_retry(call: Call) -> None:
    """An error answer after the lane called an upstream, or ran out of time, says not to retry.

    So a caller on its SDK's defaults retries only what no upstream was asked
    yet (a local wait ended it): ``x-should-retry: false`` whenever the lane's
    budget is spent, and then never a ``Retry-After`` (issue 23, defect 2).
    """
    if call.status < 400:
        return
    code = (call.body.get("error") or {}).get("code")
    if call.exchanges or code in ("deadline_exceeded", "stalled"):
        assert call.headers.get("x-should-retry") == "false", (call.status, call.headers)
    if call.headers.get("x-should-retry") == "false":
        assert "retry-after" not in call.headers, ("a wait named beside no retry", call.headers)


def hold_blame(error: Exception | None) -> None:
    """An error other than the deadline's names the last upstream failure."""
    if error is None or isinstance(error, DeadlineExceeded):
        return
    assert isinstance(error, CallFailed)
    last = error.attempts[-1] if error.attempts else None
    if last is None or last.outcome == "not_ready":
        return
    if isinstance(error, PushbackRefused):
        assert last.source.rsplit("/", 1)[-1] in str(error), (str(error), last)
    else:
        assert last.message in str(error), (str(error), last)


def hold_outcomes(records: list[CallRecord], exchanges: list[Exchange]) -> None:
    """Every upstream request is an attempt of a record, in order; a status is its outcome."""
    attempts = [a for r in records for a in r.attempts if a.outcome != "not_ready"]
    assert [a.source for a in attempts] == [e.source for e in exchanges], (attempts, exchanges)
    for attempt, exchange in zip(attempts, exchanges, strict=True):
        status = _STATUS.match(exchange.spec)
        if status is not None:
            assert attempt.outcome == status.group(1), (attempt, exchange)
