"""Source admission (issue 4), in virtual time against the in-process simulator.

Quota waits, AIMD queueing, breakers that never strand a lane, pushback that
marks one source, and the stall verdict. The simulator and the engine share
one virtual clock (``tests.virtual``), so every wait is exact.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import DeadlineExceeded, Stalled, UpstreamFailed, UpstreamRejected
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]


def source(vsim: VirtualSim, spec: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"base_url": sim_url(vsim, spec), "model": "sim-model", "name": name, **fields}


def laneway(vsim: VirtualSim, *sources: dict[str, Any], **lane: Any) -> Laneway:
    config = LanewayConfig.model_validate({"lanes": {"lane": {"sources": list(sources), **lane}}})
    return vsim.laneway(config)


def stats(lw: Laneway) -> dict[str, int]:
    return dict(lw.engine.loop.admission.stats)


@pytest.mark.parametrize(
    "breaker",
    [{}, {"failures": 1, "window": "1h", "cooldown": "1h"}],
    ids=["default-breaker", "strictest-breaker"],
)
@in_virtual_time
async def test_a_single_source_lane_is_never_cooled_out_of_rotation(
    vsim: VirtualSim, breaker: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Seed (d): six 503s in a row, then healthy: the seventh request must reach it."""
    spec = unique_spec("fail_first=6,status=503")
    with caplog.at_level(logging.WARNING, logger="laneway.admission"):
        async with laneway(vsim, source(vsim, spec, "only"), breaker=breaker) as lw:
            for _ in range(6):
                with pytest.raises(UpstreamFailed):
                    await lw.chat("lane", MESSAGES)
            response = await lw.chat("lane", MESSAGES)
            counts = stats(lw)
    assert response.source == "only"
    assert vsim.hits(spec) == 7
    assert counts["panic"] >= 2, "the open breaker was bypassed, not obeyed"
    assert sum("panic" in r.getMessage() for r in caplog.records) == 1, "logged once per episode"


@in_virtual_time
async def test_rejections_do_not_open_the_breaker(vsim: VirtualSim) -> None:
    spec = unique_spec("status=400")
    async with laneway(vsim, source(vsim, spec, "only"), breaker={"failures": 1}) as lw:
        for _ in range(3):
            with pytest.raises(UpstreamRejected):
                await lw.chat("lane", MESSAGES)
        assert "panic" not in stats(lw)


@in_virtual_time
async def test_over_tpm_a_call_waits_for_settlement_instead_of_failing(vsim: VirtualSim) -> None:
    """Each call reserves 600 of 1000 tokens; the second runs once the first settles."""
    spec = unique_spec("sleep=0.3")
    quota = {"tpm": 1000, "est_tokens": 600}
    async with laneway(vsim, source(vsim, spec, "a", **quota), deadline="5s") as lw:
        first, second = await asyncio.gather(*(lw.chat("lane", MESSAGES) for _ in range(2)))
        counts = stats(lw)
    assert len(first.attempts) == len(second.attempts) == 1
    started = sorted(vsim.hit_times(spec))
    assert started[1] - started[0] == pytest.approx(0.3)
    assert counts["wait:quota"] >= 1


@in_virtual_time
async def test_a_cancelled_attempt_releases_its_reservation(vsim: VirtualSim) -> None:
    spec = unique_spec("sleep=0.4")
    async with laneway(vsim, source(vsim, spec, "a", rpm=1), deadline="3s") as lw:
        with pytest.raises(DeadlineExceeded):
            await lw.chat("lane", MESSAGES, deadline=0.1)
        began = vsim.clock.now()
        await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() - began == pytest.approx(0.4), "no 60 s wait for a released slot"


@in_virtual_time
async def test_over_the_concurrency_limit_calls_queue_without_spending_attempts(
    vsim: VirtualSim,
) -> None:
    spec = unique_spec("sleep=0.2")
    only = source(vsim, spec, "a", concurrency={"max": 1})
    async with laneway(vsim, only, deadline="5s") as lw:
        answers = await asyncio.gather(*(lw.chat("lane", MESSAGES) for _ in range(3)))
        counts = stats(lw)
    assert all(len(a.attempts) == 1 for a in answers)
    started = sorted(vsim.hit_times(spec))
    gaps = [later - earlier for earlier, later in itertools.pairwise(started)]
    assert gaps == [pytest.approx(0.2)] * 2
    assert counts["wait:concurrency"] >= 2


@pytest.mark.parametrize(
    "policy",
    [{"max_pushbacks": 1}, {"retries": 1, "retry_on": [429]}],
    ids=["pushback", "declared-retry"],
)
@in_virtual_time
async def test_pushback_marks_one_source_and_the_call_moves_on(
    vsim: VirtualSim, policy: dict[str, Any]
) -> None:
    """The sim's rpm bucket answers 429 with Retry-After ~60 s: longer than the lane would
    wait, yet the call moves to the other source at once instead of failing."""
    limited = unique_spec("rpm=1,bucket=b")
    spare = unique_spec("ok")
    sources = (source(vsim, limited, "limited"), source(vsim, spare, "spare", priority=1))
    async with laneway(vsim, *sources, deadline="5s", **policy) as lw:
        began = vsim.clock.now()
        answers = [await lw.chat("lane", MESSAGES) for _ in range(3)]
        assert vsim.clock.now() == began
    assert [a.source for a in answers] == ["limited", "spare", "spare"]
    assert [a.outcome for a in answers[1].attempts] == ["429", "ok"]
    assert answers[1].attempts[0].pushback == ("max_pushbacks" in policy)
    assert answers[1].attempts[0].waited == 0.0
    assert vsim.hits(limited) == 2, "marked: not picked again while pushed back"


@in_virtual_time
async def test_a_lane_that_makes_no_progress_stalls_before_its_deadline(vsim: VirtualSim) -> None:
    spec = unique_spec("status=429,retry_after=0.2")
    policy = {"deadline": "10s", "max_pushbacks": 20, "stall_after": "800ms"}
    async with laneway(vsim, source(vsim, spec, "a"), **policy) as lw:
        began = vsim.clock.now()
        with pytest.raises(Stalled, match="stall_after") as err:
            await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() - began == pytest.approx(0.8)
    assert len(err.value.attempts) == 4
    assert all(a.pushback for a in err.value.attempts)


@in_virtual_time
async def test_a_failing_peer_is_demoted_and_stops_taking_first_attempts(
    vsim: VirtualSim,
) -> None:
    broken, healthy = unique_spec("status=503"), unique_spec("ok")
    sources = (source(vsim, broken, "broken"), source(vsim, healthy, "healthy"))
    policy = {"retries": 1, "retry_on": [503], "backoff": {"base": "10ms"}}
    async with laneway(vsim, *sources, **policy) as lw:
        answers = [await lw.chat("lane", MESSAGES) for _ in range(6)]
    assert {a.source for a in answers} == {"healthy"}
    assert vsim.hits(broken) == 2, "two failures demote it below its peer"
