"""The call loop end to end over real loopback HTTP against ``laneway sim``, one test per family.

``test_call_semantics.py`` pins each behaviour exactly in virtual time; these
check the same families through the aiohttp transport, real sockets and real
timers. Timings are short, and slack is honest: a call must end by its
deadline + ``LOADED`` and not before.
"""

from __future__ import annotations

import time

import pytest

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.errors import DeadlineExceeded, UpstreamFailed
from laneway.sim import RunningSim
from tests.engine.spy import sim_hits
from tests.helpers import one_lane, sim_url, unique_spec

MESSAGES = [{"role": "user", "content": "hello"}]
LOADED = 0.5
"""Upper slack of a measured wait or attempt: a timer fires when the loop next runs, which on
a loaded machine (load 10 on 2 cores) can be hundreds of ms late."""


def lane(sim: RunningSim, spec: str, **policy) -> Laneway:
    return Laneway.from_settings(one_lane(sim, spec, **policy), environ={})


async def test_ok_call_returns_typed_response(sim: RunningSim) -> None:
    async with lane(sim, unique_spec("ok")) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert response.content.startswith("sim answer")
    assert response.usage.source == "provider"
    assert [a.outcome for a in response.attempts] == ["ok"]


async def test_attempt_timeouts_are_retried_then_the_deadline_cuts(sim: RunningSim) -> None:
    spec = unique_spec("sleep=3")
    policy = dict(deadline="500ms", attempt_timeout="200ms", retries=2, retry_on=["timeout"])
    async with lane(sim, spec, backoff={"base": "10ms"}, min_attempt="20ms", **policy) as lw:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as err:
            await lw.chat("lane", MESSAGES)
        elapsed = time.monotonic() - started
    assert 0.5 <= elapsed <= 0.5 + LOADED
    first, second, *_ = err.value.attempts  # the first timed out and was retried
    assert first.outcome == "timeout" and first.elapsed >= 0.2
    # On a loaded machine the first attempt can end late enough that the deadline, not the
    # attempt timeout, cuts the second: either way it was cut, never answered.
    assert second.outcome in ("timeout", "deadline")


async def test_a_503_is_retried_after_its_backoff(sim: RunningSim) -> None:
    spec = unique_spec("fail_first=1,status=503")
    async with lane(sim, spec, retries=2, retry_on=[503], backoff={"base": "10ms"}) as lw:
        response = await lw.chat("lane", MESSAGES)
    assert [a.outcome for a in response.attempts] == ["503", "ok"]
    assert 0.01 <= response.attempts[0].waited < 0.01 + LOADED


async def test_a_retry_after_is_waited_out_without_spending_an_attempt(sim: RunningSim) -> None:
    spec = unique_spec("fail_first=1,status=429,retry_after_ms=150")
    async with lane(sim, spec, max_pushbacks=1) as lw:
        response = await lw.chat("lane", MESSAGES)
    first, second = response.attempts
    assert first.pushback and 0.15 <= first.waited < 0.15 + LOADED
    assert second.outcome == "ok"
    assert await sim_hits(sim, spec) == 2


async def test_connect_errors_are_a_class(sim: RunningSim) -> None:
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


async def test_a_quota_wait_is_bounded_by_the_deadline(sim: RunningSim) -> None:
    spec = unique_spec("ok")
    source = {"base_url": sim_url(sim, spec), "model": "sim-model", "rpm": 1}
    config = LanewayConfig.model_validate({"lanes": {"lane": {"sources": [source]}}})
    async with Laneway.from_settings(config, environ={}) as lw:
        await lw.chat("lane", MESSAGES)
        began = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="waiting for quota"):
            await lw.chat("lane", MESSAGES, deadline=0.3)
    assert 0.05 <= time.monotonic() - began < 0.3 + LOADED, "waits its room, 300 less 250 ms"
    assert await sim_hits(sim, spec) == 1
