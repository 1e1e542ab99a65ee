"""Issue 10's fault table, row by row, through the gateway: in virtual time, and on loopback.

Each test serves the row's lane (the issue's: retries 2 on 429/5xx/timeout/
connect, exponential backoff, attempt_timeout 30 s, first_byte_timeout and
idle_timeout 10 s, deadline 100 s, a priority-0 primary and a priority-1
fallback), sends the scenario's streamed calls (``stream_options.include_usage``)
and holds what the caller got against what it must get: whose words, complete,
with usage, how many requests each upstream saw, and when. ``judge`` (the
verdict ``laneway simulate --faults`` prints) must agree.

Most rows run in virtual time (``tests.server.virtual_gateway``): the caller,
the gateway's ASGI app and the simulator on one ``VirtualClock``, at the
issue's own durations (10 s timeouts; the flapping series' 20 calls over 76 s,
with the real 60 s health half-life that brings the primary back), in
milliseconds. Times there are exact: a row that waits for a timeout ends at
it, not before, and within ``TICK`` after.

The rows whose fault is a socket's (a TCP reset, a refused port), and two
that the real transport and uvicorn must carry (a stream cut off mid-body, an
upstream that never sends headers), run on loopback against one gateway for
the module, every duration times ``SCALE``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import aiohttp
import pytest

from laneway.chaos.asking import StreamedAnswer
from laneway.chaos.fault_report import RowResult
from laneway.chaos.fault_run import row_runner, time_budget
from laneway.chaos.faults import FULL_ANSWER, Hits, judge_fault, lane_body
from laneway.sim import RunningSim, fault_scenario, refusing_port
from laneway.sim.scenarios import ANSWER_WORDS, FALLBACK, PRIMARY, WORD_GAP, Specs
from tests.helpers import sim_url
from tests.server.support import RunningGateway, config, serve_gateway
from tests.server.virtual_gateway import VirtualGateway
from tests.virtual import VirtualSim, in_virtual_time

TICK = 0.05
"""Virtual seconds a row may end after its bound: time only the sim's scripted waits take."""
SCALE = 0.1
"""Loopback rows run ten times faster than the issue's durations..."""
FIRST_BYTE_SCALE = 0.02
"""...and the first-byte row fifty times: its 10 s wait is 0.2 s."""
SLACK = 1.0
"""Seconds of slack above a loopback time to answer (a shared 2-core machine, other suites
running); bounds below are exact, and the request counts tell a wasted attempt apart."""
PROMPT_TOKENS = 7
"""The sim's count for the scenarios' prompt: 25 characters, a token per 4, plus one."""
ONE_ANSWER = {
    "prompt_tokens": PROMPT_TOKENS,
    "completion_tokens": ANSWER_WORDS,
    "total_tokens": PROMPT_TOKENS + ANSWER_WORDS,
}
WORDS_BEFORE_BREAK = 40 * WORD_GAP
"""Seconds the primary of a cut or stalled row streams before it breaks off."""
LOOPBACK_SCALES = {
    "connection_reset": SCALE,
    "connection_refused": SCALE,
    "cut_mid_answer": SCALE,
    "no_headers": FIRST_BYTE_SCALE,
}
"""The rows run on loopback, and the scale of each."""
_runs = itertools.count()


async def virtual_row(vsim: VirtualSim, key: str) -> tuple[list[StreamedAnswer], Hits]:
    """Serve the row's lane at full scale in virtual time, make its calls; judge agrees."""
    scenario = fault_scenario(key)
    specs = scenario.specs(1.0, f"v{next(_runs)}")
    assert specs.primary is not None, "a refused primary needs a socket: run it on loopback"
    lane = lane_body(scenario, sim_url(vsim, specs.primary), sim_url(vsim, specs.fallback))
    gateway = VirtualGateway(vsim, config({key: lane}))
    starts = [index * scenario.gap for index in range(scenario.calls)]
    async with asyncio.timeout(time_budget([scenario], 1.0)):
        answers = await gateway.ask_series(key, starts)
    hits = Hits(vsim.hits(specs.primary), vsim.hits(specs.fallback))
    result = RowResult(scenario, answers, hits, judge_fault(scenario, answers, hits, slack=0.0))
    assert result.met, result.missed()
    return answers, hits


@dataclass
class Loopback:
    """The module's gateway on loopback, serving every loopback row's lane under its key."""

    gateway: RunningGateway
    specs: dict[str, Specs]


@pytest.fixture(scope="module")
def loopback(sim: RunningSim) -> Iterator[Loopback]:
    with refusing_port() as port:
        specs, lanes = {}, {}
        for key, scale in LOOPBACK_SCALES.items():
            scenario = fault_scenario(key)
            row = specs[key] = scenario.specs(scale, f"e2e{next(_runs)}")
            refused = f"http://127.0.0.1:{port}/v1"
            primary = sim_url(sim, row.primary) if row.primary else refused
            lanes[key] = lane_body(scenario, primary, sim_url(sim, row.fallback), scale)
        with serve_gateway(config(lanes)) as gateway:
            yield Loopback(gateway, specs)


async def loopback_row(
    sim: RunningSim, loopback: Loopback, key: str
) -> tuple[list[StreamedAnswer], Hits]:
    """Make the row's calls through the loopback gateway, count the sim's requests; judge agrees."""
    url = f"{loopback.gateway.v1}/chat/completions"
    async with aiohttp.ClientSession() as session:
        row = row_runner(
            session, url, sim.base_url, loopback.specs, LOOPBACK_SCALES[key], slack=SLACK
        )
        result = await row(fault_scenario(key))
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


@in_virtual_time
async def test_one_429_with_retry_after_waits_for_the_primary(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "retry_after_once")
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=2, fallback=0)
    assert 2 <= answer.elapsed < 2 + TICK


@in_virtual_time
async def test_429_every_time_ends_on_the_fallback(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "rate_limited_always")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits.primary in (1, 2) and hits.fallback == 1


@in_virtual_time
async def test_one_500_is_retried_on_the_primary(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "server_error_once")
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=2, fallback=0)


async def test_connection_reset_moves_to_the_fallback_at_once(sim, loopback) -> None:
    (answer,), hits = await loopback_row(sim, loopback, "connection_reset")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits.primary in (1, 2) and hits.fallback == 1
    assert answer.elapsed < 1 * SCALE + SLACK


async def test_connection_refused_moves_to_the_fallback_at_once(sim, loopback) -> None:
    (answer,), hits = await loopback_row(sim, loopback, "connection_refused")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=None, fallback=1)
    assert answer.elapsed < 1 * SCALE + SLACK


@in_virtual_time
async def test_no_headers_moves_to_the_fallback_at_first_byte_timeout(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "no_headers")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)
    assert 10 <= answer.elapsed < 10 + TICK


async def test_no_headers_on_loopback_moves_to_the_fallback_at_first_byte_timeout(
    sim, loopback
) -> None:
    """Through aiohttp and uvicorn: the held connection is given up at 10 s (scaled)."""
    (answer,), hits = await loopback_row(sim, loopback, "no_headers")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)
    first_byte = 10 * FIRST_BYTE_SCALE
    assert first_byte <= answer.elapsed < first_byte + SLACK


@in_virtual_time
async def test_slow_first_token_moves_to_the_fallback_at_first_byte_timeout(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "slow_first_token")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)
    assert 10 <= answer.elapsed < 10 + TICK


async def test_stream_cut_continues_on_the_fallback_with_a_prefill(sim, loopback) -> None:
    (answer,), hits = await loopback_row(sim, loopback, "cut_mid_answer")
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)
    assert answer.elapsed < 1 * SCALE + SLACK


@in_virtual_time
async def test_stream_cut_continues_on_the_fallback_with_a_prefill_in_virtual_time(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "cut_mid_answer")
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)
    assert WORDS_BEFORE_BREAK <= answer.elapsed < WORDS_BEFORE_BREAK + TICK


@in_virtual_time
async def test_stream_stall_continues_on_the_fallback_after_idle_timeout(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "stall_mid_answer")
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)
    stalled = WORDS_BEFORE_BREAK + 10
    assert stalled <= answer.elapsed < stalled + TICK


@in_virtual_time
async def test_stream_cut_restarts_on_a_fallback_that_refuses_prefill(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "cut_prefill_refused")
    assert whole(answer, PRIMARY, FALLBACK)
    assert hits == Hits(primary=1, fallback=1)


@in_virtual_time
async def test_malformed_chunk_is_skipped(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "malformed_chunk")
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=0)


@in_virtual_time
async def test_stream_without_done_is_complete(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "no_done")
    assert whole(answer, PRIMARY) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=0)
    assert answer.elapsed < TICK


@in_virtual_time
async def test_content_filter_400_reaches_the_caller_unchanged(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "content_filter")
    assert (answer.status, answer.error) == (400, "content_filter")
    assert hits == Hits(primary=1, fallback=0)


@in_virtual_time
async def test_context_length_400_moves_to_a_larger_window(vsim) -> None:
    (answer,), hits = await virtual_row(vsim, "context_length")
    assert whole(answer, FALLBACK) and answer.usage == ONE_ANSWER
    assert hits == Hits(primary=1, fallback=1)


@in_virtual_time
async def test_flapping_primary_answers_every_call_and_comes_back(vsim) -> None:
    """At full scale: a 60 s outage, calls 4 s apart, the 60 s health half-life."""
    answers, hits = await virtual_row(vsim, "flapping")
    assert len(answers) == 20
    assert all(whole(a, PRIMARY) or whole(a, FALLBACK) for a in answers)
    settled = 60 + 10
    assert any(a.start >= settled for a in answers)
    assert all(whole(a, PRIMARY) for a in answers if a.start >= settled)
    assert hits.primary is not None and hits.primary >= 1 and hits.fallback >= 1
