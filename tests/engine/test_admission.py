"""Source admission end to end, against the simulator over loopback HTTP (issue 4).

Quota waits, AIMD queueing, breakers that never strand a lane, pushback that
marks one source, and the stall verdict. Slack is generous for a loaded
machine; every bound that matters is a lower bound or a count.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Any

import aiohttp
import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import DeadlineExceeded, Stalled, UpstreamFailed, UpstreamRejected
from laneway.sim import RunningSim
from tests.helpers import sim_url, unique_spec

MESSAGES = [{"role": "user", "content": "hello"}]
SLACK = 0.3


async def hit_times(sim: RunningSim, spec: str) -> list[float]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response,
    ):
        return list((await response.json())["times"])


def source(sim: RunningSim, spec: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"base_url": sim_url(sim, spec), "model": "sim-model", "name": name, **fields}


def laneway(*sources: dict[str, Any], **lane: Any) -> Laneway:
    config = LanewayConfig.model_validate({"lanes": {"lane": {"sources": list(sources), **lane}}})
    return Laneway.from_settings(config, environ={})


def stats(lw: Laneway) -> dict[str, int]:
    return dict(lw.engine.loop.admission.stats)


@pytest.mark.parametrize(
    "breaker",
    [{}, {"failures": 1, "window": "1h", "cooldown": "1h"}],
    ids=["default-breaker", "strictest-breaker"],
)
async def test_a_single_source_lane_is_never_cooled_out_of_rotation(sim, breaker, caplog) -> None:
    """Seed (d): six 503s in a row, then healthy: the seventh request must reach it."""
    spec = unique_spec("fail_first=6,status=503")
    with caplog.at_level(logging.WARNING, logger="laneway.admission"):
        async with laneway(source(sim, spec, "only"), breaker=breaker) as lw:
            for _ in range(6):
                with pytest.raises(UpstreamFailed):
                    await lw.chat("lane", MESSAGES)
            response = await lw.chat("lane", MESSAGES)
            counts = stats(lw)
    assert response.source == "only"
    assert len(await hit_times(sim, spec)) == 7
    assert counts["panic"] >= 2, "the open breaker was bypassed, not obeyed"
    assert sum("panic" in r.getMessage() for r in caplog.records) == 1, "logged once per episode"


async def test_rejections_do_not_open_the_breaker(sim) -> None:
    spec = unique_spec("status=400")
    async with laneway(source(sim, spec, "only"), breaker={"failures": 1}) as lw:
        for _ in range(3):
            with pytest.raises(UpstreamRejected):
                await lw.chat("lane", MESSAGES)
        assert "panic" not in stats(lw)


async def test_over_tpm_a_call_waits_for_settlement_instead_of_failing(sim) -> None:
    """Each call reserves 600 of 1000 tokens; the second runs once the first settles."""
    spec = unique_spec("sleep=0.3")
    quota = {"tpm": 1000, "est_tokens": 600}
    async with laneway(source(sim, spec, "a", **quota), deadline="5s") as lw:
        first, second = await asyncio.gather(*(lw.chat("lane", MESSAGES) for _ in range(2)))
        counts = stats(lw)
    assert len(first.attempts) == len(second.attempts) == 1
    started = sorted(await hit_times(sim, spec))
    assert started[1] - started[0] >= 0.3
    assert counts["wait:quota"] >= 1


async def test_a_quota_wait_is_bounded_by_the_deadline(sim) -> None:
    spec = unique_spec("ok")
    async with laneway(source(sim, spec, "a", rpm=1), deadline="400ms") as lw:
        await lw.chat("lane", MESSAGES)
        began = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="waiting for quota") as err:
            await lw.chat("lane", MESSAGES)
    assert 0.4 <= time.monotonic() - began < 0.4 + SLACK
    assert err.value.attempts == ()
    assert len(await hit_times(sim, spec)) == 1


async def test_a_cancelled_attempt_releases_its_reservation(sim) -> None:
    spec = unique_spec("sleep=0.4")
    async with laneway(source(sim, spec, "a", rpm=1), deadline="3s") as lw:
        with pytest.raises(DeadlineExceeded):
            await lw.chat("lane", MESSAGES, deadline=0.1)
        began = time.monotonic()
        await lw.chat("lane", MESSAGES)
    assert time.monotonic() - began < 0.4 + SLACK, "no 60 s wait for a released slot"


async def test_over_the_concurrency_limit_calls_queue_without_spending_attempts(sim) -> None:
    spec = unique_spec("sleep=0.2")
    async with laneway(source(sim, spec, "a", concurrency={"max": 1}), deadline="5s") as lw:
        answers = await asyncio.gather(*(lw.chat("lane", MESSAGES) for _ in range(3)))
        counts = stats(lw)
    assert all(len(a.attempts) == 1 for a in answers)
    started = sorted(await hit_times(sim, spec))
    assert all(later - earlier >= 0.2 for earlier, later in itertools.pairwise(started))
    assert counts["wait:concurrency"] >= 2


@pytest.mark.parametrize(
    "policy",
    [{"max_pushbacks": 1}, {"retries": 1, "retry_on": [429]}],
    ids=["pushback", "declared-retry"],
)
async def test_pushback_marks_one_source_and_the_call_moves_on(sim, policy) -> None:
    """The sim's shared rpm bucket answers 429 with Retry-After ~60 s: longer than the
    lane would wait, yet the call moves to the other source instead of failing."""
    limited = unique_spec(f"rpm=1,bucket=b{time.monotonic_ns()}")
    spare = unique_spec("ok")
    sources = (source(sim, limited, "limited"), source(sim, spare, "spare", priority=1))
    async with laneway(*sources, deadline="5s", **policy) as lw:
        began = time.monotonic()
        answers = [await lw.chat("lane", MESSAGES) for _ in range(3)]
        elapsed = time.monotonic() - began
    assert [a.source for a in answers] == ["limited", "spare", "spare"]
    assert [a.outcome for a in answers[1].attempts] == ["429", "ok"]
    assert answers[1].attempts[0].pushback == ("max_pushbacks" in policy)
    assert answers[1].attempts[0].waited < SLACK
    assert len(await hit_times(sim, limited)) == 2, "marked: not picked again while pushed back"
    assert elapsed < 1.0


async def test_a_lane_that_makes_no_progress_stalls_before_its_deadline(sim) -> None:
    spec = unique_spec("status=429,retry_after=0.2")
    policy = {"deadline": "10s", "max_pushbacks": 20, "stall_after": "800ms"}
    async with laneway(source(sim, spec, "a"), **policy) as lw:
        began = time.monotonic()
        with pytest.raises(Stalled, match="stall_after") as err:
            await lw.chat("lane", MESSAGES)
    assert 0.8 <= time.monotonic() - began < 0.8 + SLACK
    assert len(err.value.attempts) >= 3
    assert all(a.pushback for a in err.value.attempts)


async def test_a_failing_peer_is_demoted_and_stops_taking_first_attempts(sim) -> None:
    broken, healthy = unique_spec("status=503"), unique_spec("ok")
    sources = (source(sim, broken, "broken"), source(sim, healthy, "healthy"))
    policy = {"retries": 1, "retry_on": [503], "backoff": {"base": "10ms"}}
    async with laneway(*sources, **policy) as lw:
        answers = [await lw.chat("lane", MESSAGES) for _ in range(6)]
    assert {a.source for a in answers} == {"healthy"}
    assert len(await hit_times(sim, broken)) == 2, "two failures demote it below its peer"
