"""The driver's hedge race, on a virtual clock with scripted attempts (issues 25 and 26).

The first attempt runs in place and the hedge is a task a timer starts
(``laneway.engine.race``); these hold what each ending leaves: which answer
wins, what is recorded, and that every admission is given back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from laneway.app import build_lane, local_call_loop
from laneway.clocks import VirtualClock
from laneway.config.models import ChatLaneConfig
from laneway.core.errors import AttemptFailure, DeadlineExceeded
from laneway.core.failures import FailureKind
from laneway.engine.lane import Lane, Source
from laneway.policy.deadline import Deadline

PACED = {"concurrency": {"max": 4}}
Script = dict[str, tuple[float, str | AttemptFailure]]


def hedged_lane(**settings: Any) -> Lane:
    sources = [
        {"name": "a", "base_url": "http://127.0.0.1:1/v1", "model": "m", **PACED},
        {"name": "b", "base_url": "http://127.0.0.1:2/v1", "model": "m", "priority": 1, **PACED},
    ]
    config = {
        "sources": sources,
        "deadline": "10s",
        "hedge": {"after": "200ms", "max_share": 1.0},
        **settings,
    }
    return build_lane("l", ChatLaneConfig.model_validate(config), {})


def scripted(clock: VirtualClock, script: Script) -> Callable[[Source], Awaitable[str]]:
    """Each source answers (or fails) after its scripted delay."""

    async def attempt(source: Source) -> str:
        delay, ending = script[source.name]
        await clock.sleep(delay)
        if isinstance(ending, AttemptFailure):
            raise ending
        return ending

    return attempt


def in_virtual_time(main: Callable[[VirtualClock], Coroutine[Any, Any, None]]) -> None:
    clock = VirtualClock()
    clock.run(main(clock))


def released(lane: Lane) -> None:
    """Nothing of the call is held: no concurrency slot taken on either source."""
    pacers = [lane.memory.pacer(source) for source in lane.sources]
    assert [p.in_flight for p in pacers if p is not None] == [0, 0]


def status_503() -> AttemptFailure:
    return AttemptFailure(FailureKind.STATUS, "upstream answered 503", 503)


def test_a_failed_first_attempt_lets_the_running_hedge_answer() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        attempt = scripted(clock, {"a": (0.3, status_503()), "b": (0.25, "from b")})
        start = clock.now()
        done = await loop.run(lane, Deadline.after(start, 10.0), attempt)
        assert done.result == "from b"
        assert clock.now() - start == pytest.approx(0.45)
        assert [(a.source, a.outcome) for a in done.attempts] == [("a", "503"), ("b", "hedge_won")]
        released(lane)

    in_virtual_time(main)


def test_a_held_race_hands_over_the_first_answer_and_discards_a_late_loser() -> None:
    """A stream's shape: held, and a loser whose answer came as it was cancelled is closed."""

    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        discarded: list[str] = []

        async def attempt(source: Source) -> str:
            if source.name == "a":
                await clock.sleep(0.5)
                return "from a"
            try:
                await clock.sleep(10.0)
            except asyncio.CancelledError:
                return "opened as it was cancelled"
            return "from b"

        async def discard(result: str) -> None:
            discarded.append(result)

        deadline = Deadline.after(clock.now(), 10.0)
        done = await loop.run(lane, deadline, attempt, hold=True, hedged=True, discard=discard)
        assert (done.result, done.hedge) == ("from a", False)
        assert done.held is not None and done.held.source.name == "a"
        assert [(a.source, a.outcome) for a in done.attempts] == [("b", "hedge_lost")]
        assert discarded == ["opened as it was cancelled"]
        await loop.admission.abandon(done.held, None)
        released(lane)

    in_virtual_time(main)


def test_a_held_race_won_by_the_hedge_says_so() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        attempt = scripted(clock, {"a": (5.0, "from a"), "b": (0.1, "from b")})
        deadline = Deadline.after(clock.now(), 10.0)
        done = await loop.run(lane, deadline, attempt, hold=True, hedged=True)
        assert (done.result, done.hedge) == ("from b", True)
        assert done.held is not None and done.held.source.name == "b"
        assert [(a.source, a.outcome) for a in done.attempts] == [("a", "cancelled")]
        await loop.admission.abandon(done.held, None)
        released(lane)

    in_virtual_time(main)


def test_a_held_call_does_not_race_unless_asked() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        attempt = scripted(clock, {"a": (1.0, "from a"), "b": (0.1, "from b")})
        done = await loop.run(lane, Deadline.after(clock.now(), 10.0), attempt, hold=True)
        assert (done.result, done.attempts) == ("from a", ())
        assert done.held is not None
        await loop.admission.abandon(done.held, None)

    in_virtual_time(main)


def test_the_deadline_cuts_both_attempts_of_a_race_and_gives_both_back() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        attempt = scripted(clock, {"a": (5.0, "from a"), "b": (5.0, "from b")})
        with pytest.raises(DeadlineExceeded) as caught:
            await loop.run(lane, Deadline.after(clock.now(), 1.0), attempt)
        rows = [(a.source, a.outcome, round(a.elapsed, 6)) for a in caught.value.attempts]
        assert rows == [("a", "deadline", 1.0), ("b", "deadline", 0.8)]
        released(lane)
        assert loop.admission.stats["admitted"] == 2

    in_virtual_time(main)


def test_a_caller_that_leaves_mid_race_cancels_both_attempts() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        ended: list[str] = []

        async def attempt(source: Source) -> str:
            try:
                await clock.sleep(5.0)
            finally:
                ended.append(source.name)
            return source.name

        call = asyncio.ensure_future(loop.run(lane, Deadline.after(clock.now(), 10.0), attempt))
        await clock.sleep(0.5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert sorted(ended) == ["a", "b"]
        released(lane)

    in_virtual_time(main)


def test_one_timer_serves_calls_in_flight_each_hedged_at_its_own_time() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        attempt = scripted(clock, {"a": (5.0, "from a"), "b": (0.1, "from b")})

        async def call(after: float) -> tuple[float, str]:
            await clock.sleep(after)
            start = clock.now()
            done = await loop.run(lane, Deadline.after(start, 10.0), attempt)
            return clock.now() - start, done.result

        ends = await asyncio.gather(call(0.0), call(0.05), call(0.3))
        assert [(round(t, 9), r) for t, r in ends] == [(0.3, "from b")] * 3
        assert loop.hedges.waiting == {} and loop.hedges.races == {}
        released(lane)

    in_virtual_time(main)


def test_an_answer_at_the_instant_its_hedge_is_due_wins_and_no_hedge_is_sent() -> None:
    async def main(clock: VirtualClock) -> None:
        lane, loop = hedged_lane(), local_call_loop(clock)
        sent: list[str] = []

        async def attempt(source: Source) -> str:
            sent.append(source.name)
            await clock.sleep(0.2)
            return source.name

        for _ in range(3):
            done = await loop.run(lane, Deadline.after(clock.now(), 10.0), attempt)
            assert [a.outcome for a in done.attempts] == ["ok"]
        assert sent == ["a", "a", "a"]

    in_virtual_time(main)
