"""The lane engine against the real simulator over loopback HTTP (issue 2, §3).

Timings are scaled down from the seed's probes where the semantics allow; one
test runs the seed's own numbers. Slack is honest: a call must end by its
deadline + 50 ms and not before the deadline.
"""

from __future__ import annotations

import time

import aiohttp
import pytest

from laneway import Laneway
from laneway.errors import DeadlineExceeded, PushbackRefused, UpstreamFailed
from laneway.sim import RunningSim
from tests.helpers import one_lane, unique_spec

MESSAGES = [{"role": "user", "content": "hello"}]
SLACK = 0.05


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
    assert all(2.0 <= a.elapsed <= 2.0 + SLACK for a in err.value.attempts)
    assert 6.2 <= elapsed <= 6.2 + 3 * SLACK
    assert await hits(sim, spec) == 3


async def test_overall_deadline_cuts_the_third_attempt(sim) -> None:
    """Same shape with a 1.2s deadline: the third attempt is cut at the deadline."""
    spec = unique_spec("sleep=3")
    policy = dict(deadline="1200ms", attempt_timeout="500ms", retries=2, retry_on=["timeout"])
    async with lane(sim, spec, backoff={"base": "50ms"}, min_attempt="50ms", **policy) as lw:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as err:
            await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert 1.2 <= elapsed <= 1.2 + SLACK
    assert [a.outcome for a in err.value.attempts] == ["timeout", "timeout", "deadline"]
    assert err.value.attempts[-1].elapsed < 0.5
    assert await hits(sim, spec) == 3


async def test_503_is_retried(sim) -> None:
    spec = unique_spec("fail_first=1,status=503")
    async with lane(sim, spec, retries=2, retry_on=[503], backoff={"base": "10ms"}) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in response.attempts] == ["503", "ok"]
    assert response.attempts[0].waited == pytest.approx(0.01)


async def test_500_is_not_retried_when_only_503_is_listed(sim) -> None:
    spec = unique_spec("status=500")
    async with lane(sim, spec, retries=2, retry_on=[503]) as lw:
        with pytest.raises(UpstreamFailed, match="500 is not in retry_on") as err:
            await lw.chat("lane", MESSAGES)
    assert err.value.status == 500
    assert await hits(sim, spec) == 1


async def test_lane_without_declared_retries_makes_one_attempt(sim) -> None:
    """Seed's silent-default trap: nothing declared means exactly one attempt."""
    spec = unique_spec("status=503")
    async with lane(sim, spec) as lw:
        with pytest.raises(UpstreamFailed) as err:
            await lw.chat("lane", MESSAGES)
    assert len(err.value.attempts) == 1
    assert await hits(sim, spec) == 1


async def test_retry_after_is_honoured_without_spending_an_attempt(sim) -> None:
    spec = unique_spec("fail_first=1,status=429,retry_after=0.4")
    async with lane(sim, spec, deadline="5s") as lw:
        started = time.monotonic()
        response = await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 0.4 + 0.5
    first, second = response.attempts
    assert first.pushback and first.outcome == "429" and first.waited == pytest.approx(0.4)
    assert second.outcome == "ok"


async def test_retry_after_ms_header(sim) -> None:
    spec = unique_spec("fail_first=1,status=503,retry_after_ms=150")
    async with lane(sim, spec) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.attempts[0].waited == pytest.approx(0.15)


async def test_pushback_that_cannot_fit_fails_at_once(sim) -> None:
    spec = unique_spec("status=429,retry_after=5")
    async with lane(sim, spec, deadline="2s") as lw:
        started = time.monotonic()
        with pytest.raises(PushbackRefused, match="before the deadline"):
            await lw.chat("lane", MESSAGES)
        assert time.monotonic() - started < 0.5


async def test_pushback_over_the_lane_cap_fails_at_once(sim) -> None:
    spec = unique_spec("status=503,retry_after=3")
    async with lane(sim, spec, max_pushback_wait="1s") as lw:
        with pytest.raises(PushbackRefused, match="max_pushback_wait"):
            await lw.chat("lane", MESSAGES)


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
        with pytest.raises(DeadlineExceeded):
            await lw.chat("lane", MESSAGES, deadline=0.3)
        assert 0.3 <= time.monotonic() - started <= 0.3 + SLACK


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
