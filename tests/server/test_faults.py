"""Issue 10's fault table, row by row, through the gateway on loopback, ten times faster.

Each test serves the row's lane (the issue's: retries 2 on 429/5xx/timeout/
connect, exponential backoff, attempt_timeout 30 s, first_byte_timeout and
idle_timeout 10 s, deadline 100 s, a priority-0 primary and a priority-1
fallback, every duration times ``SCALE``), sends the scenario's streamed calls
(``stream_options.include_usage``) and holds what the caller got against what
it must get: whose words, complete, with usage, how many requests each
upstream saw, and when. ``judge`` (the verdict ``laneway simulate --faults``
prints) must agree.

The one duration no config scales is the health half-life (60 s), which is
what brings a recovered primary back into first place; the flapping row scales
it with the rest, so its shrunk outage is judged as the real 60 s one is.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import aiohttp
import pytest

from laneway.chaos.asking import StreamedAnswer
from laneway.chaos.fault_run import row_runner
from laneway.chaos.faults import FULL_ANSWER, Hits, lane_body
from laneway.policy.health import HealthPolicy
from laneway.sim import RunningSim, fault_scenario, refusing_port
from laneway.sim.scenarios import ANSWER_WORDS, FALLBACK, PRIMARY
from tests.helpers import sim_url
from tests.server.support import config, serve_gateway

SCALE = 0.1
FLAP_SCALE = 0.05
"""The flapping row's 20 calls take 76 s at full scale: it runs twice as fast again."""
SLACK = 1.0
"""Seconds of slack above a time to answer (a shared 2-core machine, other suites running);
bounds below are exact, and the request counts tell a wasted attempt apart."""
PROMPT_TOKENS = 7
"""The sim's count for the scenarios' prompt: 25 characters, a token per 4, plus one."""
ONE_ANSWER = {
    "prompt_tokens": PROMPT_TOKENS,
    "completion_tokens": ANSWER_WORDS,
    "total_tokens": PROMPT_TOKENS + ANSWER_WORDS,
}
HALF_LIFE = HealthPolicy().half_life
_runs = itertools.count()


@pytest.fixture(scope="module")
def refused_port() -> Iterator[int]:
    with refusing_port() as port:
        yield port


async def run_row(
    sim: RunningSim, key: str, refused_port: int, scale: float = SCALE
) -> tuple[list[StreamedAnswer], Hits]:
    """Serve the row's lane, make its calls, count the upstreams' requests; judge agrees."""
    scenario = fault_scenario(key)
    specs = scenario.specs(scale, f"e2e{next(_runs)}")
    refused = f"http://127.0.0.1:{refused_port}/v1"
    primary = sim_url(sim, specs.primary) if specs.primary else refused
    lane = lane_body(scenario, primary, sim_url(sim, specs.fallback), scale)
    with serve_gateway(config({key: lane})) as gateway:
        gateway.gateway.engine.lanes[key].health = HealthPolicy(half_life=HALF_LIFE * scale)
        async with aiohttp.ClientSession() as session:
            url = f"{gateway.v1}/chat/completions"
            row = row_runner(session, url, sim.base_url, {key: specs}, scale, slack=SLACK)
            result = await row(scenario)
    assert result.met, result.missed()
    return result.answers, result.hits


def whole(answer: StreamedAnswer, *whose: str) -> bool:
    """The complete answer, closed by [DONE], from ``whose`` words in that order."""
    return (
        answer.status == 200
        and answer.error is None
        and answer.done
        and answer.text == FULL_ANSWER
        and answer.models == whose
    )


async def test_one_429_with_retry_after_waits_for_the_primary(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "retry_after_once", refused_port)
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=2, fallback=0)
    assert 2 * SCALE <= answer.elapsed < 2 * SCALE + SLACK


async def test_429_every_time_ends_on_the_fallback(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "rate_limited_always", refused_port)
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits.primary in (1, 2) and hits.fallback == 1


async def test_one_500_is_retried_on_the_primary(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "server_error_once", refused_port)
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=2, fallback=0)


async def test_connection_reset_moves_to_the_fallback_at_once(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "connection_reset", refused_port)
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits.primary in (1, 2) and hits.fallback == 1
    assert answer.elapsed < 1 * SCALE + SLACK


async def test_connection_refused_moves_to_the_fallback_at_once(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "connection_refused", refused_port)
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=None, fallback=1)
    assert answer.elapsed < 1 * SCALE + SLACK


async def test_no_headers_moves_to_the_fallback_at_first_byte_timeout(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "no_headers", refused_port)
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)
    assert 10 * SCALE <= answer.elapsed < 10 * SCALE + SLACK


async def test_slow_first_token_moves_to_the_fallback_at_first_byte_timeout(
    sim, refused_port
) -> None:
    (answer,), hits = await run_row(sim, "slow_first_token", refused_port)
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)
    assert 10 * SCALE <= answer.elapsed < 10 * SCALE + SLACK


async def test_stream_cut_continues_on_the_fallback_with_a_prefill(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "cut_mid_answer", refused_port)
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)
    assert answer.elapsed < 1 * SCALE + SLACK


async def test_stream_stall_continues_on_the_fallback_after_idle_timeout(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "stall_mid_answer", refused_port)
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)
    assert 10 * SCALE <= answer.elapsed < 10 * SCALE + SLACK


async def test_stream_cut_restarts_on_a_fallback_that_refuses_prefill(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "cut_prefill_refused", refused_port)
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)


async def test_malformed_chunk_is_skipped(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "malformed_chunk", refused_port)
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=0)


async def test_stream_without_done_is_complete(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "no_done", refused_port)
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=0)
    assert answer.elapsed < 1 * SCALE + SLACK


async def test_content_filter_400_reaches_the_caller_unchanged(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "content_filter", refused_port)
    assert (answer.status, answer.error) == (400, "content_filter")
    assert hits == Hits(primary=1, fallback=0)


async def test_context_length_400_moves_to_a_larger_window(sim, refused_port) -> None:
    (answer,), hits = await run_row(sim, "context_length", refused_port)
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)


async def test_flapping_primary_answers_every_call_and_comes_back(sim, refused_port) -> None:
    """At a twentieth of real time: a 3 s outage, calls 0.2 s apart."""
    answers, hits = await run_row(sim, "flapping", refused_port, FLAP_SCALE)
    assert len(answers) == 20
    assert all(whole(a, PRIMARY) or whole(a, FALLBACK) for a in answers)
    settled = (60 + 10) * FLAP_SCALE
    assert any(a.start >= settled for a in answers)
    assert all(whole(a, PRIMARY) for a in answers if a.start >= settled)
    assert hits.primary is not None and hits.primary >= 1 and hits.fallback >= 1
