"""The lane engine against the real simulator over loopback HTTP (issue 2, §3).

Timings are scaled down from the seed's probes where the semantics allow; one
test runs the seed's own numbers. Slack is honest: a call must end by its
deadline + 50 ms and not before the deadline.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from laneway import Laneway
from laneway.errors import (
    CallFailed,
    DeadlineExceeded,
    PushbackRefused,
    UpstreamFailed,
    UpstreamTimeout,
)
from laneway.sim import RunningSim
from tests.helpers import one_lane, unique_spec

MESSAGES = [{"role": "user", "content": "hello"}]
SLACK = 0.05
LOADED = 0.5
"""Upper slack of a measured wait or attempt: a timer fires when the loop next runs, which on
a loaded machine (load 10 on 2 cores) can be hundreds of ms late."""


async def hits(sim: RunningSim, spec: str) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response,
    ):
        return int((await response.json())["count"])


def lane(sim: RunningSim, spec: str, **policy) -> Laneway:
    return Laneway.from_settings(one_lane(sim, spec, **policy), environ={})


async def test_ok_call_returns_typed_response(sim) -> None:
    async with lane(sim, unique_spec("ok")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.content.startswith("sim answer")
    assert response.usage.prompt_tokens is not None
    assert response.usage.source == "provider"
    assert [a.outcome for a in response.attempts] == ["ok"]
    assert response.source == "openai:sim-model"


async def test_seed_probe_per_attempt_timeout_with_two_retries(sim) -> None:
    """Seed probe A/F: timeout 2s, 2 retries, upstream sleeps 5s → 3 attempts of 2s each."""
    spec = unique_spec("sleep=5")
    policy = dict(deadline="30s", attempt_timeout="2s", retries=2, retry_on=["timeout"])
    async with lane(sim, spec, backoff={"base": "100ms"}, **policy) as lw:
        started = time.monotonic()
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert [a.outcome for a in err.value.attempts] == ["timeout"] * 3
    assert all(2.0 <= a.elapsed <= 2.0 + LOADED for a in err.value.attempts)
    assert 6.2 <= elapsed <= 6.2 + 3 * LOADED
    assert await hits(sim, spec) == 3


async def test_overall_deadline_cuts_the_third_attempt(sim) -> None:
    """Same shape with a 1.2s deadline: the third attempt is cut at the deadline.

    Two 400 ms attempts leave ~350 ms, room for the third to start even when a
    loaded machine fires each timer late (with 500 ms attempts the policy would
    rightly refuse a third that could not run ``min_attempt``).
    """
    spec = unique_spec("sleep=3")
    policy = dict(deadline="1200ms", attempt_timeout="400ms", retries=2, retry_on=["timeout"])
    async with lane(sim, spec, backoff={"base": "50ms"}, min_attempt="50ms", **policy) as lw:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as err:
            await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert 1.2 <= elapsed <= 1.2 + SLACK
    assert [a.outcome for a in err.value.attempts] == ["timeout", "timeout", "deadline"]
    assert err.value.attempts[-1].elapsed < 0.4
    assert await hits(sim, spec) == 3


async def test_503_is_retried(sim) -> None:
    spec = unique_spec("fail_first=1,status=503")
    async with lane(sim, spec, retries=2, retry_on=[503], backoff={"base": "10ms"}) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in response.attempts] == ["503", "ok"]
    assert 0.01 <= response.attempts[0].waited < 0.01 + LOADED


async def test_each_class_spends_only_its_own_retries(sim) -> None:
    """``retry_on: {503: 1, timeout: 2}`` under ``retries: 3``: a 503 is retried once."""
    spec = unique_spec("status=503")
    policy = dict(retries=3, retry_on={503: 1, "timeout": 2}, backoff={"base": "10ms"})
    async with lane(sim, spec, **policy) as lw:
        with pytest.raises(UpstreamFailed, match="retry_on gives 503 1 retry, spent"):
            await lw.chat("lane", MESSAGES)
    assert await hits(sim, spec) == 2


async def test_500_is_not_retried_when_only_503_is_listed(sim) -> None:
    spec = unique_spec("status=500")
    async with lane(sim, spec, retries=2, retry_on=[503]) as lw:
        with pytest.raises(UpstreamFailed, match="500 is not in retry_on") as err:
            await lw.chat("lane", MESSAGES)
    assert err.value.status == 500
    assert await hits(sim, spec) == 1


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
async def test_lane_without_declared_retries_makes_one_request(sim, fault: str) -> None:
    """Seed's silent-default trap: nothing declared means one request, whatever the answer."""
    spec = unique_spec(fault)
    async with lane(sim, spec, deadline="2s", attempt_timeout="300ms", min_attempt="10ms") as lw:
        try:
            response = await lw.chat("lane", MESSAGES)
            attempts = response.attempts
        except CallFailed as err:
            attempts = err.attempts
    assert len(attempts) == 1
    assert await hits(sim, spec) == 1


async def test_retry_after_is_honoured_without_spending_an_attempt(sim) -> None:
    spec = unique_spec("fail_first=1,status=429,retry_after=0.4")
    async with lane(sim, spec, deadline="5s", max_pushbacks=1) as lw:
        started = time.monotonic()
        response = await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 0.4 + 0.5
    first, second = response.attempts
    assert first.pushback and first.outcome == "429" and 0.4 <= first.waited < 0.4 + LOADED
    assert second.outcome == "ok"


async def test_declared_retry_waits_out_the_retry_after(sim) -> None:
    """A retry of the source that asked to wait goes back no sooner than it asked."""
    spec = unique_spec("fail_first=1,status=503,retry_after=0.4")
    policy = dict(retries=1, retry_on=[503], backoff={"base": "10ms"})
    async with lane(sim, spec, deadline="5s", **policy) as lw:
        started = time.monotonic()
        response = await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 0.4 + 0.5
    first, second = response.attempts
    assert not first.pushback and 0.4 <= first.waited < 0.4 + LOADED
    assert second.outcome == "ok"


async def test_retry_after_ms_header(sim) -> None:
    spec = unique_spec("fail_first=1,status=503,retry_after_ms=150")
    async with lane(sim, spec, max_pushbacks=1) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert 0.15 <= response.attempts[0].waited < 0.15 + LOADED


DECLARED = [{"max_pushbacks": 1}, {"retries": 1, "retry_on": [429, 503]}]


@pytest.mark.parametrize("policy", DECLARED, ids=["pushback", "declared-retry"])
async def test_pushback_that_cannot_fit_fails_at_once(sim, policy) -> None:
    spec = unique_spec("status=429,retry_after=5")
    async with lane(sim, spec, deadline="2s", **policy) as lw:
        started = time.monotonic()
        with pytest.raises(PushbackRefused, match="before the deadline") as err:
            await lw.chat("lane", MESSAGES)
        assert time.monotonic() - started < 0.5
    assert "source openai:sim-model asked to wait 5s, ready at " in str(err.value)
    assert err.value.ready_in == 5.0
    assert await hits(sim, spec) == 1


@pytest.mark.parametrize("policy", DECLARED, ids=["pushback", "declared-retry"])
async def test_pushback_over_the_lane_cap_fails_at_once(sim, policy) -> None:
    spec = unique_spec("status=503,retry_after=3")
    async with lane(sim, spec, max_pushback_wait="1s", **policy) as lw:
        with pytest.raises(PushbackRefused, match="max_pushback_wait") as err:
            await lw.chat("lane", MESSAGES)
    assert "source openai:sim-model asked to wait 3s" in str(err.value)
    assert await hits(sim, spec) == 1


async def test_with_pushback_off_later_calls_do_not_wait_for_a_retry_after(sim) -> None:
    """A lone source that asked for 5 s is still called by the next call: not out of rotation."""
    spec = unique_spec("fail_first=1,status=429,retry_after=5")
    async with lane(sim, spec, deadline="2s") as lw:
        with pytest.raises(UpstreamFailed):
            await lw.chat("lane", MESSAGES)
        started = time.monotonic()
        response = await lw.chat("lane", MESSAGES)
        assert time.monotonic() - started < SLACK * 4
    assert [a.outcome for a in response.attempts] == ["ok"]
    assert await hits(sim, spec) == 2


async def test_with_pushback_on_a_mark_past_the_deadline_fails_the_next_call_at_once(
    sim,
) -> None:
    """Waiting for a mark that ends after the deadline would only end in a 504: refuse now."""
    spec = unique_spec("status=429,retry_after=5")
    async with lane(sim, spec, deadline="10s", max_pushbacks=1) as lw:
        first = asyncio.create_task(lw.chat("lane", MESSAGES))
        await asyncio.sleep(0.3)
        started = time.monotonic()
        with pytest.raises(PushbackRefused, match="pushed back by its Retry-After") as err:
            await lw.chat("lane", MESSAGES, deadline=1.0)
        assert time.monotonic() - started < 0.5
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
    assert err.value.attempts == () and err.value.deadline == 1.0
    assert "source openai:sim-model" in str(err.value)
    assert await hits(sim, spec) == 1


async def test_pushbacks_per_call_are_bounded(sim) -> None:
    spec = unique_spec("status=429,retry_after=0.05")
    async with lane(sim, spec, max_pushbacks=2) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert [a.pushback for a in err.value.attempts] == [True, True, False]
    assert await hits(sim, spec) == 3


async def test_caller_deadline_is_the_smaller(sim) -> None:
    spec = unique_spec("sleep=3")
    async with lane(sim, spec, deadline="10s") as lw:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as err:
            await lw.chat("lane", MESSAGES, deadline=0.3)
        assert 0.3 <= time.monotonic() - started <= 0.3 + SLACK
    assert err.value.deadline == 0.3


async def test_every_error_reports_the_budget_the_call_had(sim) -> None:
    """``CallFailed.deadline`` is the lane's deadline tightened by the caller's, on every path."""
    async with lane(sim, unique_spec("status=500"), deadline="10s") as lw:
        with pytest.raises(UpstreamFailed) as tightened:
            await lw.chat("lane", MESSAGES, deadline=4.0)
        with pytest.raises(UpstreamFailed) as own:
            await lw.chat("lane", MESSAGES)
    assert (tightened.value.deadline, own.value.deadline) == (4.0, 10.0)


async def test_attempts_that_all_timed_out_are_an_upstream_timeout(sim) -> None:
    spec = unique_spec("sleep=3")
    policy = dict(attempt_timeout="200ms", retries=1, retry_on=["timeout"])
    async with lane(sim, spec, deadline="5s", backoff={"base": "10ms"}, **policy) as lw:
        with pytest.raises(UpstreamTimeout) as err:
            await lw.chat("lane", MESSAGES)
    assert err.value.code == "upstream_timeout"
    assert [a.outcome for a in err.value.attempts] == ["timeout", "timeout"]


async def test_backoff_sleep_is_cut_by_the_deadline(sim) -> None:
    """A backoff that would overrun the deadline is not slept: the error returns at once."""
    spec = unique_spec("status=503")
    async with lane(
        sim, spec, deadline="1s", retries=3, retry_on=[503], backoff={"base": "2s"}
    ) as lw:
        started = time.monotonic()
        with pytest.raises(UpstreamFailed, match="no time left"):
            await lw.chat("lane", MESSAGES)
        assert time.monotonic() - started < 0.5


async def test_connect_errors_are_a_class(sim) -> None:
    config = one_lane(sim, "ok", retries=1, retry_on=["connect"], backoff={"base": "10ms"})
    source = (
        config.lanes["lane"].sources[0].model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    )
    lane_config = config.lanes["lane"].model_copy(update={"sources": [source]})
    config = config.model_copy(update={"lanes": {"lane": lane_config}})
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in err.value.attempts] == ["connect", "connect"]


async def test_empty_completion_is_retried_when_listed(sim) -> None:
    spec = unique_spec("empty")
    async with lane(sim, spec, retries=1, retry_on=["empty"], backoff={"base": "10ms"}) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in err.value.attempts] == ["empty", "empty"]


async def test_empty_completion_is_returned_when_not_listed(sim) -> None:
    async with lane(sim, unique_spec("empty")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.content == ""


async def test_missing_usage_is_unknown_not_zero(sim) -> None:
    async with lane(sim, unique_spec("nousage")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.usage.prompt_tokens is None
    assert response.usage.source == "none"
