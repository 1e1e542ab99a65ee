"""Spans from finished calls, exported to the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import Span, StatusCode, Tracer

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.core.records import CallRecord
from laneway.core.types import Attempt
from laneway.errors import UpstreamFailed
from laneway.tracing import SpanObserver
from tests.helpers import one_lane, sim_url, unique_spec
from tests.virtual import VirtualSim, in_virtual_time

HELLO = [{"role": "user", "content": "hello"}]
USAGE_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
RETRY_ONCE = {"retries": 1, "retry_on": [503], "backoff": {"base": "10ms"}}


@pytest.fixture
def exported() -> Iterator[tuple[InMemorySpanExporter, SpanObserver]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, SpanObserver(provider)
    provider.shutdown()


def split(spans: tuple[ReadableSpan, ...]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    """The one call span and its attempt children, in order."""
    (call,) = [s for s in spans if s.parent is None]
    children = sorted((s for s in spans if s.parent is not None), key=lambda s: s.start_time or 0)
    assert call.context is not None
    assert all(c.parent is not None and c.parent.span_id == call.context.span_id for c in children)
    return call, children


async def call_lane(sim, observer: SpanObserver, spec: str, **lane) -> None:
    config = one_lane(sim, unique_spec(spec), **lane)
    async with Laneway.from_settings(config, environ={}, observers=[observer]) as lw:
        await lw.chat("lane", HELLO)


async def test_a_retried_call_is_one_span_with_a_child_per_attempt(sim, exported) -> None:
    exporter, observer = exported
    await call_lane(sim, observer, "fail_first=1,status=503", **RETRY_ONCE)
    call, (first, second) = split(exporter.get_finished_spans())
    assert call.name == "chat lane" and call.status.status_code is StatusCode.UNSET
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "lane"
    assert attributes["gen_ai.response.model"] == "sim-model"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "openai"
    assert attributes["laneway.lane"] == "lane"
    assert str(attributes["laneway.source"]).startswith("openai:sim-model")
    assert attributes["laneway.attempts"] == 2
    assert attributes["http.response.status_code"] == 200
    tokens = [attributes[k] for k in USAGE_KEYS]
    assert all(isinstance(t, int) and t > 0 for t in tokens)
    first_attrs, second_attrs = dict(first.attributes or {}), dict(second.attributes or {})
    assert (first_attrs["laneway.attempt.outcome"], first_attrs["http.response.status_code"]) == (
        "503",
        503,
    )
    assert first.status.status_code is StatusCode.ERROR
    assert first_attrs["error.type"] == "503"
    assert second_attrs["laneway.attempt.outcome"] == "ok"
    assert second_attrs["http.response.status_code"] == 200
    assert second.status.status_code is StatusCode.UNSET
    assert second_attrs["laneway.source"] == attributes["laneway.source"]
    assert second_attrs["gen_ai.request.model"] == "sim-model"
    assert [first_attrs["laneway.attempt"], second_attrs["laneway.attempt"]] == [1, 2]
    times = [call.start_time, first.start_time, first.end_time, second.start_time]
    assert all(t is not None for t in times) and sorted(times) == times  # type: ignore[type-var]
    gap = (second.start_time or 0) - (first.end_time or 0)
    assert gap >= 10_000_000  # the 10 ms backoff the first attempt waited
    assert second.end_time is not None and call.end_time is not None
    assert second.end_time <= call.end_time


async def test_unknown_usage_leaves_token_attributes_unset(sim, exported) -> None:
    exporter, observer = exported
    await call_lane(sim, observer, "nousage")
    call, (attempt,) = split(exporter.get_finished_spans())
    for span in (call, attempt):
        assert not set(USAGE_KEYS) & set(span.attributes or {})
    assert "laneway.usage_source" not in (call.attributes or {})


async def test_a_failed_call_has_error_status(sim, exported) -> None:
    exporter, observer = exported
    with pytest.raises(UpstreamFailed):
        await call_lane(sim, observer, "status=503")
    call, attempts = split(exporter.get_finished_spans())
    assert call.status.status_code is StatusCode.ERROR
    assert call.status.description == "upstream_error"
    assert (call.attributes or {})["error.type"] == "upstream_error"
    assert (call.attributes or {})["http.response.status_code"] == 503
    assert attempts and all(a.status.status_code is StatusCode.ERROR for a in attempts)
    assert not set(USAGE_KEYS) & set(call.attributes or {})


@in_virtual_time
async def test_a_hedge_race_is_two_sibling_attempt_spans_that_overlap(
    vsim: VirtualSim, exported: tuple[InMemorySpanExporter, SpanObserver]
) -> None:
    exporter, observer = exported
    slow, fast = unique_spec("sleep=5"), unique_spec("sleep=0.1")
    sources = [
        {"base_url": sim_url(vsim, slow), "model": "sim-model", "priority": 0},
        {"base_url": sim_url(vsim, fast), "model": "sim-model", "priority": 1},
    ]
    lane = {"sources": sources, "hedge": {"after": "200ms", "max_share": 1.0}}
    config = LanewayConfig.model_validate({"lanes": {"lane": lane}})
    built = Laneway.from_settings(
        config, environ={}, transport=vsim.transport, clock=vsim.clock, observers=[observer]
    )
    async with built as lw:
        await lw.chat("lane", HELLO)
    call, (first, hedge) = split(exporter.get_finished_spans())
    outcomes = [dict(s.attributes or {})["laneway.attempt.outcome"] for s in (first, hedge)]
    assert outcomes == ["cancelled", "hedge_won"]
    assert first.start_time is not None and first.end_time is not None
    assert hedge.start_time is not None and hedge.end_time is not None
    assert hedge.start_time - first.start_time == pytest.approx(200_000_000, abs=1_000)
    assert first.start_time < hedge.start_time < first.end_time, "the two attempts overlap"
    assert hedge.end_time == pytest.approx(first.end_time, abs=1_000), "the loser is cut at the win"
    assert hedge.end_time - hedge.start_time == pytest.approx(100_000_000, abs=1_000)
    assert call.end_time is not None and hedge.end_time <= call.end_time
    assert all(s.status.status_code is StatusCode.UNSET for s in (first, hedge))


class CountingTracer:
    """A tracer that counts the spans started on it (recording or not)."""

    def __init__(self, inner: Tracer) -> None:
        self.inner = inner
        self.started = 0

    def start_span(self, *args: Any, **kwargs: Any) -> Span:
        self.started += 1
        return self.inner.start_span(*args, **kwargs)


def test_a_sampled_out_call_starts_no_attempt_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = SpanObserver(provider)
    counting = CountingTracer(observer.tracer)
    observer.tracer = counting  # type: ignore[assignment]
    attempts = (Attempt("a", "503", 0.1, status=503), Attempt("a", "ok", 0.2))
    record = CallRecord(1.0, "lane", "chat", "ok", 0.3, attempts, source="a")
    observer.observe(record)
    assert counting.started == 1, "the call's span only: its attempts are sampled out with it"
    assert exporter.get_finished_spans() == ()
    provider.shutdown()
