"""Every call leaves one record, whatever its outcome."""

from __future__ import annotations

import asyncio

import pytest

from laneway.app import build_engine
from laneway.core.records import CallMeta, CallRecord
from laneway.core.types import ChatRequest, EmbedRequest
from laneway.engine.gateway import Engine
from laneway.errors import DeadlineExceeded, UpstreamFailed
from laneway.http import AiohttpTransport
from laneway.server.errors import error_reply
from tests.helpers import one_lane, unique_spec

REQUEST = ChatRequest([{"role": "user", "content": "hello"}])


class Collect:
    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


def engine(sim, spec: str, **lane) -> tuple[Engine, Collect]:
    sink = Collect()
    built = build_engine(
        one_lane(sim, spec, **lane), {}, transport=AiohttpTransport(), observers=[sink]
    )
    return built, sink


async def test_success_record(sim) -> None:
    e, sink = engine(sim, unique_spec("ok"))
    await e.chat("lane", REQUEST, meta=CallMeta(request_id="r1", caller="k"))
    await e.aclose()
    (record,) = sink.records
    assert (record.outcome, record.lane, record.kind, record.provider) == (
        "ok",
        "lane",
        "chat",
        "openai",
    )
    assert record.model == "sim-model" and record.meta.request_id == "r1"
    assert record.usage.prompt_tokens is not None and record.latency > 0


async def test_failure_record_carries_attempts(sim) -> None:
    e, sink = engine(sim, unique_spec("status=503"))
    with pytest.raises(UpstreamFailed):
        await e.chat("lane", REQUEST)
    await e.aclose()
    (record,) = sink.records
    assert record.outcome == "error" and record.error == "upstream_error"
    assert record.status == 503 and len(record.attempts) == 1
    assert record.usage.source == "none"


async def test_stream_records(sim) -> None:
    e, sink = engine(sim, unique_spec("chunks=2"))
    async for _ in e.chat_stream("lane", REQUEST):
        pass
    cut, _ = engine(sim, unique_spec("cut_after=1"))
    cut.recorder.observers = [sink]
    with pytest.raises(Exception, match="interrupted"):
        async for _ in cut.chat_stream("lane", REQUEST):
            pass
    await e.aclose()
    await cut.aclose()
    ok, broken = sink.records
    assert ok.stream and ok.outcome == "ok" and ok.ttfb is not None and ok.usage.known
    assert broken.outcome == "error" and broken.error == "stream_interrupted"


async def test_cancelled_call_is_recorded(sim) -> None:
    e, sink = engine(sim, unique_spec("sleep=5"))
    task = asyncio.create_task(e.chat("lane", REQUEST))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await e.aclose()
    assert [r.error for r in sink.records] == ["cancelled"]


async def test_embed_record_has_dimension(sim) -> None:
    e, sink = engine(sim, unique_spec("ok"), kind="embed", dimensions=8)
    await e.embed("lane", EmbedRequest(["a", "b"]))
    await e.aclose()
    assert sink.records[0].embedding_dim == 8


async def test_a_failed_records_status_is_the_http_status_answered(sim) -> None:
    """Issue 23 defect 12: a deadline that cut the retry after a 500 was logged as null (and,
    with the 500 last, as 500) while the client got a 504."""
    spec = unique_spec("status=500,sleep=0.4")
    policy = {"retries": 1, "retry_on": [500], "backoff": {"base": "10ms"}, "deadline": "700ms"}
    e, sink = engine(sim, spec, **policy)
    with pytest.raises(DeadlineExceeded) as err:
        await e.chat("lane", REQUEST)
    await e.aclose()
    (record,) = sink.records
    assert [a.outcome for a in record.attempts] == ["500", "deadline"]
    assert record.status == error_reply(err.value, "lane").status == 504
