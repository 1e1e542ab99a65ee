"""The call loop's semantics in virtual time (issue 2, §3; issue 11).

The simulator runs in the test's event loop on a virtual clock
(``tests.virtual``), so the seed's own numbers cost no real time and every
timing is exact: a call cut at a 1.2 s deadline ends at 1.2 s, not "by
1.2 s + slack". The loopback end-to-end counterparts are in
``test_loopback.py``.
"""

from __future__ import annotations

import asyncio

import pytest

from laneway import Laneway
from laneway.errors import (
    CallFailed,
    DeadlineExceeded,
    PushbackRefused,
    UpstreamFailed,
    UpstreamTimeout,
)
from tests.helpers import one_lane, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

MESSAGES = [{"role": "user", "content": "hello"}]


def lane(vsim: VirtualSim, spec: str, **policy) -> Laneway:
    return vsim.laneway(one_lane(vsim, spec, **policy))


@in_virtual_time
async def test_ok_call_returns_typed_response(vsim: VirtualSim) -> None:
    async with lane(vsim, unique_spec("ok")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.content.startswith("sim answer")
    assert response.usage.prompt_tokens is not None
    assert response.usage.source == "provider"
    assert [a.outcome for a in response.attempts] == ["ok"]
    assert response.source == "openai:sim-model"
    assert response.attempts[0].elapsed == 0.0


@in_virtual_time
async def test_seed_probe_per_attempt_timeout_with_two_retries(vsim: VirtualSim) -> None:
    """Seed probe A/F: timeout 2s, 2 retries, upstream sleeps 5s → 3 attempts of 2s each."""
    spec = unique_spec("sleep=5")
    policy = dict(deadline="30s", attempt_timeout="2s", retries=2, retry_on=["timeout"])
    async with lane(vsim, spec, backoff={"base": "100ms"}, **policy) as lw:
        started = vsim.clock.now()
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
    assert [a.outcome for a in err.value.attempts] == ["timeout"] * 3
    assert [a.elapsed for a in err.value.attempts] == [2.0] * 3
    assert [a.waited for a in err.value.attempts[:2]] == [pytest.approx(0.1)] * 2
    assert elapsed == pytest.approx(6.2)
    assert vsim.hits(spec) == 3


@in_virtual_time
async def test_overall_deadline_cuts_the_third_attempt(vsim: VirtualSim) -> None:
    """A 5 s deadline over 2 s attempts: the third attempt is cut 0.8 s in, at the deadline."""
    spec = unique_spec("sleep=30")
    policy = dict(deadline="5s", attempt_timeout="2s", retries=2, retry_on=["timeout"])
    async with lane(vsim, spec, backoff={"base": "100ms"}, **policy) as lw:
        started = vsim.clock.now()
        with pytest.raises(DeadlineExceeded) as err:
            await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
    assert elapsed == pytest.approx(5.0)
    assert [a.outcome for a in err.value.attempts] == ["timeout", "timeout", "deadline"]
    assert err.value.attempts[-1].elapsed == pytest.approx(0.8)
    assert vsim.hits(spec) == 3


@in_virtual_time
async def test_503_is_retried_after_its_backoff(vsim: VirtualSim) -> None:
    spec = unique_spec("fail_first=1,status=503")
    async with lane(vsim, spec, retries=2, retry_on=[503], backoff={"base": "250ms"}) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in response.attempts] == ["503", "ok"]
    assert response.attempts[0].waited == pytest.approx(0.25)


@in_virtual_time
async def test_exponential_backoff_doubles_up_to_its_cap(vsim: VirtualSim) -> None:
    spec = unique_spec("status=503")
    backoff = {"kind": "exponential", "base": "1s", "cap": "3s"}
    policy = dict(deadline="60s", retries=4, retry_on=[503], backoff=backoff)
    async with lane(vsim, spec, **policy) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    waits = [a.waited for a in err.value.attempts[:-1]]
    assert waits == [pytest.approx(w) for w in (1.0, 2.0, 3.0, 3.0)]
    assert vsim.hits(spec) == 5


@in_virtual_time
async def test_each_class_spends_only_its_own_retries(vsim: VirtualSim) -> None:
    """``retry_on: {503: 1, timeout: 2}`` under ``retries: 3``: a 503 is retried once."""
    spec = unique_spec("status=503")
    policy = dict(retries=3, retry_on={503: 1, "timeout": 2}, backoff={"base": "10ms"})
    async with lane(vsim, spec, **policy) as lw:
        with pytest.raises(UpstreamFailed, match="retry_on gives 503 1 retry, spent"):
            await lw.chat("lane", MESSAGES)
    assert vsim.hits(spec) == 2


@in_virtual_time
async def test_500_is_not_retried_when_only_503_is_listed(vsim: VirtualSim) -> None:
    spec = unique_spec("status=500")
    async with lane(vsim, spec, retries=2, retry_on=[503]) as lw:
        with pytest.raises(UpstreamFailed, match="500 is not in retry_on") as err:
            await lw.chat("lane", MESSAGES)
    assert err.value.status == 500
    assert vsim.hits(spec) == 1


@pytest.mark.parametrize(
    "fault",
    [
        "status=503",
        "status=503,retry_after=0.1",
        "status=429,retry_after=0.1",
        "status=429,retry_after_ms=100",
        "status=500,retry_after=0.1",
        "sleep=1",
        "empty",
    ],
)
@in_virtual_time
async def test_lane_without_declared_retries_makes_one_request(
    vsim: VirtualSim, fault: str
) -> None:
    """Seed's silent-default trap: nothing declared means one request, whatever the answer."""
    spec = unique_spec(fault)
    async with lane(vsim, spec, deadline="2s", attempt_timeout="300ms", min_attempt="10ms") as lw:
        try:
            response = await lw.chat("lane", MESSAGES)
            attempts = response.attempts
        except CallFailed as err:
            attempts = err.attempts
    assert len(attempts) == 1
    assert vsim.hits(spec) == 1


@in_virtual_time
async def test_retry_after_is_honoured_without_spending_an_attempt(vsim: VirtualSim) -> None:
    spec = unique_spec("fail_first=1,status=429,retry_after=2")
    async with lane(vsim, spec, deadline="5s", max_pushbacks=1) as lw:
        started = vsim.clock.now()
        response = await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
    assert elapsed == pytest.approx(2.0)
    first, second = response.attempts
    assert first.pushback and first.outcome == "429" and first.waited == pytest.approx(2.0)
    assert second.outcome == "ok"


@in_virtual_time
async def test_declared_retry_waits_out_the_retry_after(vsim: VirtualSim) -> None:
    """A retry of the source that asked to wait goes back no sooner than it asked."""
    spec = unique_spec("fail_first=1,status=503,retry_after=2")
    policy = dict(retries=1, retry_on=[503], backoff={"base": "10ms"})
    async with lane(vsim, spec, deadline="5s", **policy) as lw:
        started = vsim.clock.now()
        response = await lw.chat("lane", MESSAGES)
        elapsed = vsim.clock.now() - started
    assert elapsed == pytest.approx(2.0)
    first, second = response.attempts
    assert not first.pushback and first.waited == pytest.approx(2.0)
    assert second.outcome == "ok"


@in_virtual_time
async def test_retry_after_ms_header(vsim: VirtualSim) -> None:
    spec = unique_spec("fail_first=1,status=503,retry_after_ms=150")
    async with lane(vsim, spec, max_pushbacks=1) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.attempts[0].waited == pytest.approx(0.15)


DECLARED = [{"max_pushbacks": 1}, {"retries": 1, "retry_on": [429, 503]}]


@pytest.mark.parametrize("policy", DECLARED, ids=["pushback", "declared-retry"])
@in_virtual_time
async def test_pushback_that_cannot_fit_fails_at_once(vsim: VirtualSim, policy) -> None:
    spec = unique_spec("status=429,retry_after=5")
    async with lane(vsim, spec, deadline="2s", **policy) as lw:
        started = vsim.clock.now()
        with pytest.raises(PushbackRefused, match="before the deadline") as err:
            await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() == started
    assert "source openai:sim-model asked to wait 5s, ready at " in str(err.value)
    assert err.value.ready_in == 5.0
    assert vsim.hits(spec) == 1


@pytest.mark.parametrize("policy", DECLARED, ids=["pushback", "declared-retry"])
@in_virtual_time
async def test_pushback_over_the_lane_cap_fails_at_once(vsim: VirtualSim, policy) -> None:
    spec = unique_spec("status=503,retry_after=3")
    async with lane(vsim, spec, max_pushback_wait="1s", **policy) as lw:
        with pytest.raises(PushbackRefused, match="max_pushback_wait") as err:
            await lw.chat("lane", MESSAGES)
    assert "source openai:sim-model asked to wait 3s" in str(err.value)
    assert vsim.hits(spec) == 1


@in_virtual_time
async def test_with_pushback_off_later_calls_do_not_wait_for_a_retry_after(
    vsim: VirtualSim,
) -> None:
    """A lone source that asked for 5 s is still called by the next call: not out of rotation."""
    spec = unique_spec("fail_first=1,status=429,retry_after=5")
    async with lane(vsim, spec, deadline="2s") as lw:
        with pytest.raises(UpstreamFailed):
            await lw.chat("lane", MESSAGES)
        started = vsim.clock.now()
        response = await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() == started
    assert [a.outcome for a in response.attempts] == ["ok"]
    assert vsim.hits(spec) == 2


@in_virtual_time
async def test_with_pushback_on_a_mark_past_the_deadline_fails_the_next_call_at_once(
    vsim: VirtualSim,
) -> None:
    """Waiting for a mark that ends after the deadline would only end in a 504: refuse now."""
    spec = unique_spec("status=429,retry_after=5")
    async with lane(vsim, spec, deadline="10s", max_pushbacks=1) as lw:
        first = asyncio.create_task(lw.chat("lane", MESSAGES))
        await vsim.clock.sleep(0.3)
        started = vsim.clock.now()
        with pytest.raises(PushbackRefused, match="pushed back by its Retry-After") as err:
            await lw.chat("lane", MESSAGES, deadline=1.0)
        assert vsim.clock.now() == started
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
    assert err.value.attempts == () and err.value.deadline == 1.0
    assert "source openai:sim-model" in str(err.value)
    assert vsim.hits(spec) == 1


@in_virtual_time
async def test_pushbacks_per_call_are_bounded(vsim: VirtualSim) -> None:
    spec = unique_spec("status=429,retry_after=0.05")
    async with lane(vsim, spec, max_pushbacks=2) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert [a.pushback for a in err.value.attempts] == [True, True, False]
    assert vsim.hits(spec) == 3


@in_virtual_time
async def test_caller_deadline_is_the_smaller(vsim: VirtualSim) -> None:
    spec = unique_spec("sleep=3")
    async with lane(vsim, spec, deadline="10s") as lw:
        started = vsim.clock.now()
        with pytest.raises(DeadlineExceeded) as err:
            await lw.chat("lane", MESSAGES, deadline=0.3)
        assert vsim.clock.now() - started == pytest.approx(0.3)
    assert err.value.deadline == 0.3


@in_virtual_time
async def test_every_error_reports_the_budget_the_call_had(vsim: VirtualSim) -> None:
    """``CallFailed.deadline`` is the lane's deadline tightened by the caller's, on every path."""
    async with lane(vsim, unique_spec("status=500"), deadline="10s") as lw:
        with pytest.raises(UpstreamFailed) as tightened:
            await lw.chat("lane", MESSAGES, deadline=4.0)
        with pytest.raises(UpstreamFailed) as own:
            await lw.chat("lane", MESSAGES)
    assert (tightened.value.deadline, own.value.deadline) == (4.0, 10.0)


@in_virtual_time
async def test_attempts_that_all_timed_out_are_an_upstream_timeout(vsim: VirtualSim) -> None:
    spec = unique_spec("sleep=3")
    policy = dict(attempt_timeout="200ms", retries=1, retry_on=["timeout"])
    async with lane(vsim, spec, deadline="5s", backoff={"base": "10ms"}, **policy) as lw:
        with pytest.raises(UpstreamTimeout) as err:
            await lw.chat("lane", MESSAGES)
    assert err.value.code == "upstream_timeout"
    assert [a.outcome for a in err.value.attempts] == ["timeout", "timeout"]


@in_virtual_time
async def test_backoff_sleep_is_cut_by_the_deadline(vsim: VirtualSim) -> None:
    """A backoff that would overrun the deadline is not slept: the error returns at once."""
    spec = unique_spec("status=503")
    policy = dict(deadline="1s", retries=3, retry_on=[503], backoff={"base": "2s"})
    async with lane(vsim, spec, **policy) as lw:
        started = vsim.clock.now()
        with pytest.raises(UpstreamFailed, match="no time left"):
            await lw.chat("lane", MESSAGES)
        assert vsim.clock.now() == started


@in_virtual_time
async def test_empty_completion_is_retried_when_listed(vsim: VirtualSim) -> None:
    spec = unique_spec("empty")
    async with lane(vsim, spec, retries=1, retry_on=["empty"], backoff={"base": "10ms"}) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in err.value.attempts] == ["empty", "empty"]


@in_virtual_time
async def test_empty_completion_is_returned_when_not_listed(vsim: VirtualSim) -> None:
    async with lane(vsim, unique_spec("empty")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.content == ""


@in_virtual_time
async def test_missing_usage_is_unknown_not_zero(vsim: VirtualSim) -> None:
    async with lane(vsim, unique_spec("nousage")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.usage.prompt_tokens is None
    assert response.usage.source == "none"
