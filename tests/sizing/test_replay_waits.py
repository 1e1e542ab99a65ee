"""The replay models the waits of the real calls: quota gates and breakers (issue 23, defect 10).

The calls are made for real, in virtual time, through the engine against the
simulator; their records become telemetry samples, and the replay of the same
settings must predict what they did. Before, each call replayed alone on a
fresh lane memory: no quota queue, no breaker opened by the failures before
it (p99 107 ms for a lane whose real calls took 5 s).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from laneway.app import build_engine
from laneway.config.models import LaneConfig, LanewayConfig
from laneway.core.errors import CallFailed
from laneway.core.records import CallRecord
from laneway.core.types import ChatRequest
from laneway.sizing.replay import replay
from laneway.sizing.samples import percentile, recorded_calls
from laneway.telemetry import CallSample
from tests.helpers import unique_spec
from tests.sizing.test_size_cli import Records
from tests.virtual import VirtualSim

REQUEST = ChatRequest([{"role": "user", "content": "size me"}])


def sample(record: CallRecord) -> CallSample:
    """A record as telemetry gives it back to ``laneway size``."""
    attempts = tuple(a.as_dict() for a in record.attempts)
    tokens = record.usage.total_tokens
    return CallSample(
        record.time,
        record.kind,
        record.stream,
        record.outcome,
        record.latency * 1000,
        attempts,
        tokens,
    )


def record(lane: dict[str, Any], arrivals: list[float]) -> tuple[LaneConfig, list[CallRecord]]:
    """Calls of lane ``x`` started at ``arrivals`` (virtual seconds), each to its end."""
    vsim = VirtualSim()
    config = LanewayConfig.model_validate({"lanes": {"x": lane}})
    kept = Records()
    engine = build_engine(config, {}, transport=vsim.transport, clock=vsim.clock, observers=[kept])

    async def one(at: float) -> None:
        await vsim.clock.sleep(at)
        with contextlib.suppress(CallFailed):
            await engine.chat("x", REQUEST)

    async def run() -> None:
        try:
            await asyncio.gather(*(one(at) for at in arrivals))
        finally:
            await engine.aclose()

    vsim.clock.run(run())
    return config.lanes["x"], kept.kept


def source(spec: str, **extra: Any) -> dict[str, Any]:
    """A source on the virtual simulator behaving as ``spec``."""
    return {"base_url": f"{VirtualSim.base_url}/b/{spec}/v1", "model": "m", **extra}


def test_calls_queued_at_an_rpm_gate_replay_with_their_wait() -> None:
    """20 calls at once on ``rpm: 10``: half wait a minute. Replayed alone, none waited."""
    lane = {
        "deadline": "90s",
        "sources": [source(unique_spec("sleep=0.02"), rpm=10)],
    }
    config, records = record(lane, [0.0] * 20)
    walls = sorted(r.latency for r in records)
    assert walls[-1] > 60, "the recording: the second ten waited for the quota window"
    replayed = replay("x", config, recorded_calls(sample(r) for r in records))
    predicted = sorted(r.wall for r in replayed)
    assert percentile(predicted, 99) == pytest.approx(percentile(walls, 99), abs=0.1)
    assert percentile(predicted, 50) == pytest.approx(percentile(walls, 50), abs=0.1)
    assert all(r.answered for r in replayed)


def test_a_breaker_opened_by_recorded_failures_sends_the_later_calls_to_the_fallback() -> None:
    """The primary fails; its breaker opens after two failures, so later calls go to the slow
    fallback at once. Replayed alone, every call met the primary's failures again."""
    lane = {
        "retries": 1,
        "retry_on": [500],
        "backoff": {"base": "10ms"},
        "deadline": "10s",
        "sources": [
            source(unique_spec("status=500"), breaker={"failures": 2, "cooldown": "60s"}),
            source(unique_spec("sleep=1"), priority=1),
        ],
    }
    config, records = record(lane, [0.5 * n for n in range(10)])
    answered = sum(r.outcome == "ok" for r in records)
    assert answered == 9, "the recording: only the first call met the primary twice"
    replayed = replay("x", config, recorded_calls(sample(r) for r in records))
    assert sum(r.answered for r in replayed) == answered
    assert sum(r.requests for r in replayed) == sum(len(r.attempts) for r in records)
