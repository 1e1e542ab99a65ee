"""No local gate makes a call wait beyond what fits in its deadline (issue 23, defect 1).

Each gate that can hold a call (breaker, half-open probe lease, quota,
concurrency, Retry-After marks, backoff) either admits it, waits no longer
than the deadline's room (``laneway.policy.waits.fits``), or ends the call at
once with its reason: the upstream's own failure when one happened. Key
limits never wait (a 429 at once, ``tests/server/test_key_limits.py``).
In virtual time: every duration asserted is exact.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import DeadlineExceeded, PushbackRefused, UpstreamFailed
from tests.helpers import sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]
RETRIED_500 = {"retries": 2, "retry_on": [500], "backoff": {"kind": "constant", "base": "200ms"}}


def source(vsim: VirtualSim, spec: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"base_url": sim_url(vsim, spec), "model": "sim-model", "name": name, **fields}


def laneway(vsim: VirtualSim, *sources: dict[str, Any], **lane: Any) -> Laneway:
    config = LanewayConfig.model_validate({"lanes": {"lane": {"sources": list(sources), **lane}}})
    return vsim.laneway(config)


@in_virtual_time
async def test_a_lone_failing_source_answers_its_own_failure_every_call(vsim: VirtualSim) -> None:
    """The issue's report: the second call waited 8 s for the breaker and got a 504."""
    spec = unique_spec("status=500")
    async with laneway(vsim, source(vsim, spec, "only"), deadline="8s", **RETRIED_500) as lw:
        for call in range(4):
            began = vsim.clock.now()
            with pytest.raises(UpstreamFailed) as err:
                await lw.chat("lane", MESSAGES)
            assert vsim.clock.now() - began == pytest.approx(0.4), f"call {call}"
            assert err.value.status == 500
            assert [a.outcome for a in err.value.attempts] == ["500"] * 3
    assert vsim.hits(spec) == 12


@in_virtual_time
async def test_a_breaker_cooldown_past_the_deadline_never_holds_a_call(vsim: VirtualSim) -> None:
    """Two sources, both breakers open for an hour: the lane panics, it does not wait."""
    a, b = unique_spec("status=500"), unique_spec("status=500")
    breaker = {"failures": 1, "window": "1h", "cooldown": "1h"}
    sources = (source(vsim, a, "a"), source(vsim, b, "b"))
    async with laneway(vsim, *sources, deadline="2s", breaker=breaker, **RETRIED_500) as lw:
        for _ in range(3):
            began = vsim.clock.now()
            with pytest.raises(UpstreamFailed) as err:
                await lw.chat("lane", MESSAGES)
            assert vsim.clock.now() - began <= 0.4 + 1e-9
            assert err.value.status == 500
            assert len(err.value.attempts) == 3


@in_virtual_time
async def test_a_half_open_probe_lease_never_holds_a_lone_source(vsim: VirtualSim) -> None:
    """One call holds the probe of a half-open lone source; another does not wait for the lease
    (that could outlast its deadline): it is admitted at once, as the lane's last source."""
    spec = unique_spec("fail_first=1,status=500,sleep=3")
    breaker = {"failures": 1, "window": "1h", "cooldown": "1s"}
    async with laneway(vsim, source(vsim, spec, "only"), deadline="10s", breaker=breaker) as lw:
        with pytest.raises(UpstreamFailed):
            await lw.chat("lane", MESSAGES)
        await asyncio.sleep(1.0)
        probe = asyncio.ensure_future(lw.chat("lane", MESSAGES))
        await asyncio.sleep(0)
        second = await lw.chat("lane", MESSAGES, deadline=4.0)
        assert (await probe).source == second.source == "only"
    first, probed, admitted = sorted(vsim.hit_times(spec))
    assert probed == admitted == first + 4.0, "admitted beside the probe, not after its lease"


@in_virtual_time
async def test_a_quota_wait_stops_when_no_attempt_could_fit(vsim: VirtualSim) -> None:
    """A release can end a quota wait early, so the call waits its room (400 ms less 250 ms)."""
    spec = unique_spec("ok")
    async with laneway(vsim, source(vsim, spec, "a", rpm=1), deadline="400ms") as lw:
        await lw.chat("lane", MESSAGES)
        began = vsim.clock.now()
        with pytest.raises(DeadlineExceeded, match="waiting for quota") as err:
            await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() - began == pytest.approx(0.15)
    assert "would not fit" in str(err.value)
    assert err.value.attempts == ()
    assert vsim.hits(spec) == 1


@in_virtual_time
async def test_a_concurrency_wait_ends_when_no_attempt_could_fit(vsim: VirtualSim) -> None:
    """Only a release ends a full limit's wait: the call waits its room (1 s less 250 ms)."""
    spec = unique_spec("sleep=3")
    only = source(vsim, spec, "a", concurrency={"max": 1})
    async with laneway(vsim, only, deadline="10s") as lw:
        holder = asyncio.ensure_future(lw.chat("lane", MESSAGES))
        await asyncio.sleep(0)
        began = vsim.clock.now()
        with pytest.raises(DeadlineExceeded, match="waiting for concurrency") as err:
            await lw.chat("lane", MESSAGES, deadline=1.0)
        assert vsim.clock.now() - began == pytest.approx(0.75)
        assert (await holder).source == "a"
    assert "until a slot frees" in str(err.value)


@in_virtual_time
async def test_a_retry_after_mark_past_the_deadline_fails_at_once(vsim: VirtualSim) -> None:
    spec = unique_spec("fail_first=1,status=429,retry_after=5")
    only = source(vsim, spec, "a")
    async with laneway(vsim, only, deadline="2s", max_pushbacks=1) as lw:
        with pytest.raises(PushbackRefused):
            await lw.chat("lane", MESSAGES)
        began = vsim.clock.now()
        with pytest.raises(PushbackRefused, match="pushed back"):
            await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() == began
    assert vsim.hits(spec) == 1


@in_virtual_time
async def test_a_backoff_that_cannot_fit_ends_on_the_upstream_failure(vsim: VirtualSim) -> None:
    spec = unique_spec("status=500")
    policy = {"retries": 2, "retry_on": [500], "backoff": {"kind": "constant", "base": "2s"}}
    async with laneway(vsim, source(vsim, spec, "a"), deadline="1s", **policy) as lw:
        began = vsim.clock.now()
        with pytest.raises(UpstreamFailed, match="no time left") as err:
            await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() == began
    assert err.value.status == 500
