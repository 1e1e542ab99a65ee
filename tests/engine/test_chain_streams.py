"""Streams and lanes that are not ready walk ``fallback_lanes`` like any call (library).

Counted at the simulator: which lanes' upstreams saw a request, and how many.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from laneway import Laneway
from laneway.accounting import Pricer
from laneway.config.models import LanewayConfig
from laneway.core.records import CallRecord
from laneway.errors import DeadlineExceeded, LaneNotReady, StreamInterrupted, UpstreamRejected
from laneway.sim import RunningSim
from laneway.sim._answers import answer_pieces
from tests.batch.support import collect, texts
from tests.engine.spy import sim_hits
from tests.helpers import Upstream, sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

HELLO = [{"role": "user", "content": "hello"}]
WORDS = 40
FULL_ANSWER = "".join(answer_pieces(WORDS))
UNSET = "LANEWAY_TEST_CHAIN_UNSET_KEY"


class Records:
    """An observer keeping every call record."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


def chain(sim: Upstream, specs: dict[str, str], **bodies: dict[str, Any]) -> LanewayConfig:
    """One lane per spec, ``primary`` falling back to the others in order."""
    lanes: dict[str, Any] = {}
    for name, spec in specs.items():
        source = {"base_url": sim_url(sim, spec), "model": "sim-model", **bodies.pop(name, {})}
        lanes[name] = {"sources": [source]}
    lanes["primary"]["fallback_lanes"] = [name for name in specs if name != "primary"]
    for name, body in bodies.items():
        lanes[name.removesuffix("_lane")].update(body)
    return LanewayConfig.model_validate({"lanes": lanes})


async def stream_all(lw: Laneway, lane: str = "primary") -> tuple[Any, Exception | None]:
    """The stream once drained, and the error that ended it, if any; one answer id throughout."""
    stream = lw.chat_stream(lane, HELLO)
    ids: set[object] = set()
    failure: Exception | None = None
    try:
        async for chunk in stream:
            ids.add((chunk.raw or {}).get("id"))
    except (StreamInterrupted, UpstreamRejected, LaneNotReady) as exc:
        failure = exc
    assert len(ids) <= 1
    return stream, failure


def on_loopback(config: LanewayConfig, environ: dict[str, str]) -> Laneway:
    """The library over real HTTP, on the system clock."""
    return Laneway.from_settings(config, environ=environ)


async def run(
    config: LanewayConfig,
    environ: dict[str, str] | None = None,
    laneway: Callable[[LanewayConfig, dict[str, str]], Laneway] = on_loopback,
) -> Any:
    """Stream ``config``'s primary lane through ``laneway`` (the loopback sim unless given)."""
    records = Records()
    async with laneway(config, environ or {}) as lw:
        lw.engine.recorder.observers.append(records)
        stream, failure = await stream_all(lw)
    return stream, failure, records.records


def rows(records: list[CallRecord]) -> list[tuple[str, str, str | None]]:
    return [(r.lane, r.outcome, r.error) for r in records]


async def test_a_stream_whose_lane_fails_before_its_first_token_goes_to_the_next_lane(
    sim: RunningSim,
) -> None:
    down, ok = unique_spec("status=500"), unique_spec(f"chunks={WORDS}")
    config = chain(
        sim,
        {"primary": down, "rescue": ok},
        primary={"price": {"input": 0.0, "output": 1.0}},
        rescue={"price": {"input": 0.0, "output": 100.0}},
    )
    stream, failure, records = await run(config)
    assert failure is None and stream.content == FULL_ANSWER
    assert stream.cost == Decimal(repr(WORDS * 100.0 / 1e6)), "the failed lane billed nothing"
    assert stream.lane.name == "rescue" and stream.usage is not None
    assert [(a.source, a.outcome) for a in stream.attempts] == [
        ("primary/openai:sim-model", "500"),
        ("openai:sim-model", "ok"),
    ]
    assert rows(records) == [
        ("primary", "error", "upstream_error"),
        ("rescue", "ok", None),
    ], "each lane's call leaves its row"
    assert (await sim_hits(sim, down), await sim_hits(sim, ok)) == (1, 1)


@in_virtual_time
async def test_a_stream_whose_lane_spends_its_deadline_share_goes_to_the_next_lane(
    vsim: VirtualSim,
) -> None:
    silent, ok = unique_spec("sleep=30"), unique_spec(f"chunks={WORDS}")
    config = chain(vsim, {"primary": silent, "rescue": ok}, primary_lane={"deadline": "300ms"})
    stream, failure, records = await run(config, laneway=vsim.laneway)
    assert failure is None and stream.content == FULL_ANSWER
    assert [a.outcome for a in stream.attempts] == ["deadline", "ok"]
    assert rows(records)[0] == ("primary", "error", "deadline_exceeded")
    assert (vsim.hits(silent), vsim.hits(ok)) == (1, 1)
    assert vsim.hit_times(ok) == [pytest.approx(0.3)], "the rescue starts when the share is spent"


@in_virtual_time
async def test_a_stream_chain_ends_with_the_callers_deadline(vsim: VirtualSim) -> None:
    silent, ok = unique_spec("sleep=30"), unique_spec(f"chunks={WORDS}")
    config = chain(vsim, {"primary": silent, "rescue": ok})
    async with vsim.laneway(config) as lw:
        stream = lw.chat_stream("primary", HELLO, deadline=0.4)
        with pytest.raises(DeadlineExceeded) as failed:
            async for _ in stream:
                pass
    assert failed.value.lane == "primary" and [a.outcome for a in failed.value.attempts] == [
        "deadline"
    ]
    assert vsim.hits(ok) == 0, "no time was left to start the rescue"


async def test_the_callers_own_rejection_ends_a_stream_on_its_lane(sim: RunningSim) -> None:
    bad, ok = unique_spec("status=400"), unique_spec(f"chunks={WORDS}")
    _, failure, _ = await run(chain(sim, {"primary": bad, "rescue": ok}))
    assert isinstance(failure, UpstreamRejected)
    assert [a.source for a in failure.attempts] == ["primary/openai:sim-model"]
    assert await sim_hits(sim, ok) == 0


async def test_a_cut_stream_resumes_on_the_next_lane_under_restart(sim: RunningSim) -> None:
    cut, ok = unique_spec(f"chunks={WORDS},cut_after=15"), unique_spec(f"chunks={WORDS}")
    config = chain(
        sim,
        {"primary": cut, "rescue": ok},
        primary={"price": {"input": 0.0, "output": 1.0}},
        rescue={"price": {"input": 0.0, "output": 100.0}},
        primary_lane={"continue_on_cut": "restart"},
    )
    stream, failure, records = await run(config)
    assert failure is None
    assert stream.content == FULL_ANSWER, "the rescue's repeat of the sent text is cut"
    assert [(a.source, a.outcome, a.continuation) for a in stream.attempts] == [
        ("primary/openai:sim-model", "cut", False),
        ("openai:sim-model", "ok", True),
    ]
    assert rows(records) == [
        ("primary", "error", "stream_interrupted"),
        ("rescue", "ok", None),
    ]
    primary, rescue = records
    cut_part = primary.usage.completion_tokens
    assert cut_part and primary.usage.source == "estimated", "the cut part is estimated"
    assert rescue.usage.completion_tokens == WORDS, "the restarted answer is billed in full"
    assert stream.usage is not None and stream.usage.completion_tokens == cut_part + WORDS
    cost = Pricer.for_lanes(config.lanes).answer_cost(
        "rescue", "chat", 0.0, stream.attempts, stream.usage, stream.source
    )
    assert cost.usd == pytest.approx((cut_part + WORDS * 100.0) / 1e6), "each part at its rate"
    assert stream.cost is not None and float(stream.cost) == pytest.approx(cost.usd)
    assert (await sim_hits(sim, cut), await sim_hits(sim, ok)) == (1, 1)


@pytest.mark.parametrize("mode", [False, True])
async def test_a_cut_stream_ends_with_the_error_unless_its_lane_restarts(
    sim: RunningSim, mode: bool
) -> None:
    cut, ok = unique_spec(f"chunks={WORDS},cut_after=15"), unique_spec(f"chunks={WORDS}")
    config = chain(sim, {"primary": cut, "rescue": ok}, primary_lane={"continue_on_cut": mode})
    stream, failure, records = await run(config)
    assert isinstance(failure, StreamInterrupted)
    assert stream.content == "".join(answer_pieces(WORDS)[:15])
    assert rows(records) == [("primary", "error", "stream_interrupted")]
    assert await sim_hits(sim, ok) == 0, "a prefill continuation is the lane's own sources' only"


async def test_a_resumed_answer_that_diverges_ends_the_stream(sim: RunningSim) -> None:
    cut, other = unique_spec(f"chunks={WORDS},cut_after=15"), unique_spec("ok")
    config = chain(
        sim, {"primary": cut, "rescue": other}, primary_lane={"continue_on_cut": "restart"}
    )
    stream, failure, records = await run(config)
    assert isinstance(failure, StreamInterrupted)
    assert stream.content == "".join(answer_pieces(WORDS)[:15]), "nothing invented was sent"
    assert [a.outcome for a in stream.attempts] == ["cut", "diverged"]
    assert rows(records) == [
        ("primary", "error", "stream_interrupted"),
        ("rescue", "error", "stream_interrupted"),
    ]


def keyed(sim: RunningSim, spec: str) -> dict[str, Any]:
    """A source whose key variable is unset in the tests' environment."""
    return {"api_key": f"os.environ/{UNSET}", "name": "keyed"}


async def test_a_lane_that_is_not_ready_goes_straight_to_its_chain(sim: RunningSim) -> None:
    unused, ok = unique_spec("ok"), unique_spec(f"chunks={WORDS}")
    config = chain(sim, {"primary": unused, "rescue": ok}, primary=keyed(sim, unused))
    stream, failure, records = await run(config)
    assert failure is None and stream.content == FULL_ANSWER
    (skip, *_), answered = stream.attempts, stream.attempts[-1]
    assert (skip.source, skip.outcome) == ("primary/keyed", "not_ready")
    assert UNSET in skip.message and answered.outcome == "ok"
    skipped, served = records
    assert (skipped.lane, skipped.error) == ("primary", "lane_not_ready")
    assert UNSET in skipped.attempts[0].message, "telemetry says why it was skipped"
    assert served.lane == "rescue" and served.outcome == "ok"
    assert await sim_hits(sim, ok) == 1


async def test_a_call_on_a_lane_that_is_not_ready_is_answered_by_its_chain(
    sim: RunningSim,
) -> None:
    unused, ok = unique_spec("ok"), unique_spec("ok")
    config = chain(sim, {"primary": unused, "rescue": ok}, primary=keyed(sim, unused))
    records = Records()
    async with Laneway.from_settings(config, environ={}) as lw:
        lw.engine.recorder.observers.append(records)
        answer = await lw.chat("primary", HELLO)
    assert answer.lane == "rescue"
    assert [a.outcome for a in answer.attempts] == ["not_ready", "ok"]
    assert rows(records.records) == [("primary", "error", "lane_not_ready"), ("rescue", "ok", None)]
    assert (await sim_hits(sim, unused), await sim_hits(sim, ok)) == (0, 1)


async def test_an_embed_lane_that_is_not_ready_is_answered_by_its_chain(sim: RunningSim) -> None:
    unused, ok = unique_spec("ok"), unique_spec("ok")
    config = chain(
        sim,
        {"primary": unused, "rescue": ok},
        primary=keyed(sim, unused),
        primary_lane={"kind": "embed"},
        rescue_lane={"kind": "embed"},
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        answer = await lw.embed("primary", ["a", "b"])
    assert answer.lane == "rescue" and len(answer.vectors) == 2
    assert await sim_hits(sim, unused) == 0


async def test_a_chain_with_no_ready_lane_names_every_lane_and_why(sim: RunningSim) -> None:
    first, second = unique_spec("ok"), unique_spec("ok")
    config = chain(
        sim,
        {"primary": first, "rescue": second},
        primary=keyed(sim, first),
        rescue=keyed(sim, second),
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(LaneNotReady) as refused:
            await lw.chat("primary", HELLO)
        with pytest.raises(LaneNotReady):
            lw.chat_stream("primary", HELLO)
    message = str(refused.value)
    assert message.startswith("lane 'primary' is not ready: source keyed")
    assert "fallback lane 'rescue': source keyed" in message and UNSET in message
    assert (await sim_hits(sim, first), await sim_hits(sim, second)) == (0, 0)


async def test_a_batch_job_on_a_lane_that_is_not_ready_runs_on_its_chain(sim: RunningSim) -> None:
    unused, ok = unique_spec("ok"), unique_spec("ok")
    config = chain(
        sim,
        {"primary": unused, "rescue": ok},
        primary=keyed(sim, unused),
        primary_lane={"kind": "embed", "max_batch_items": 4},
        rescue_lane={"kind": "embed", "max_batch_items": 4},
    )
    async with Laneway.from_settings(config, environ={}) as lw:
        results = await collect(lw.embed_many("primary", texts(8)))
    assert all(r.ok for r in results) and len(results) == 8
    assert (await sim_hits(sim, unused), await sim_hits(sim, ok)) == (0, 2)
