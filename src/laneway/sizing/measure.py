"""``laneway size --measure``: each candidate's real worst wall, measured, not derived.

Arithmetic (attempts x timeout + backoff) under-predicts: the seed measured
LiteLLM 2.5-3 s over it, against a 30 s client deadline. This drives the lane
itself: live calls to its sources, or to a simulated upstream that answers
slower than any timeout (``--slow-upstream``), so every attempt runs to its
bound and the wall is the schedule's worst. The upstream requests sent are
counted at the transport and never exceed ``max_calls``: a run that could
push the count past it is not started.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

from laneway.app import build_engine
from laneway.config.models import (
    ChatLaneConfig,
    EmbedLaneConfig,
    LaneConfig,
    LanewayConfig,
    OcrLaneConfig,
    SourceConfig,
)
from laneway.core.errors import CallFailed
from laneway.core.messages import ChatMessage
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream, Transport
from laneway.core.types import ChatRequest, EmbedRequest
from laneway.engine.gateway import Engine
from laneway.engine.ocr import SAMPLE_PNG
from laneway.sizing.candidates import CandidateSettings

MEASURE_TEXT = "laneway size: measuring the lane's worst wall"


@dataclass(slots=True)
class CountingTransport:
    """Counts every request sent upstream (what ``max_calls`` bounds)."""

    inner: Transport
    sent: int = 0

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Count, then send."""
        self.sent += 1
        return await self.inner.send(request)

    def stream(self, request: HttpRequest) -> AbstractAsyncContextManager[HttpStream]:
        """Count, then open the stream."""
        self.sent += 1
        return self.inner.stream(request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


@dataclass(slots=True)
class Measured:
    """One candidate's runs: their walls and outcomes, or why it was not run."""

    settings: CandidateSettings
    walls: list[float] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    requests: int = 0
    skipped: str | None = None

    @property
    def worst(self) -> float | None:
        """The longest wall measured (``None`` when nothing ran)."""
        return max(self.walls, default=None)


def most_requests(lane: LaneConfig) -> int:
    """The most upstream requests one call of ``lane`` can make."""
    cuts = isinstance(lane, ChatLaneConfig) and lane.continue_on_cut
    continuations = len(lane.sources) - 1 if cuts else 0
    return 1 + lane.retries + lane.max_pushbacks + continuations


def slow_sources(lane: LaneConfig, base_url: str, seconds: float) -> LaneConfig:
    """``lane`` with every source an OpenAI-compatible sim that answers after ``seconds``."""
    sources = [
        SourceConfig(
            base_url=f"{base_url}/b/sleep={seconds:g}/v1",
            model=source.model,
            name=source.name or f"{source.provider}:{source.model}",
            priority=source.priority,
        )
        for source in lane.sources
    ]
    return lane.model_copy(update={"sources": sources})


async def measure(
    name: str,
    config: LanewayConfig,
    environ: Mapping[str, str],
    candidates: Sequence[CandidateSettings],
    transport: Transport,
    *,
    runs: int,
    max_calls: int,
) -> tuple[list[Measured], int]:
    """Run each candidate ``runs`` times on lane ``name``; return the results and requests sent."""
    counter = CountingTransport(transport)
    try:
        results = [
            await _candidate(name, config, environ, settings, counter, runs, max_calls)
            for settings in candidates
        ]
    finally:
        await counter.aclose()
    return results, counter.sent


async def _candidate(
    name: str,
    config: LanewayConfig,
    environ: Mapping[str, str],
    settings: CandidateSettings,
    counter: CountingTransport,
    runs: int,
    max_calls: int,
) -> Measured:
    lane = _uncached(settings.apply(config.lanes[name]))
    measured = Measured(settings)
    bound = most_requests(lane)
    one_lane = config.model_copy(update={"lanes": {name: lane}})
    async with _engine(one_lane, environ, counter) as engine:
        for _ in range(runs):
            if counter.sent + bound > max_calls:
                measured.skipped = f"a run could send {bound} request(s), over --max-calls"
                break
            before = counter.sent
            wall, outcome = await _run(engine, name, lane)
            measured.walls.append(wall)
            measured.outcomes.append(outcome)
            measured.requests += counter.sent - before
    return measured


@asynccontextmanager
async def _engine(
    config: LanewayConfig, environ: Mapping[str, str], transport: CountingTransport
) -> AsyncIterator[Engine]:
    """An engine sharing ``transport`` (closed by ``measure``, not here)."""
    engine = build_engine(config, environ, transport=transport, fresh=True)
    try:
        yield engine
    finally:
        await engine.loop.admission.aclose()
        await engine.cache.aclose()


async def _run(engine: Engine, name: str, lane: LaneConfig) -> tuple[float, str]:
    """One call on the lane: its wall and ``ok`` or the error code."""
    started = time.monotonic()
    try:
        if isinstance(lane, EmbedLaneConfig):
            texts = [MEASURE_TEXT] * lane.max_batch_items
            await engine.embed(name, EmbedRequest(texts, None, {}))
        elif isinstance(lane, OcrLaneConfig):
            await engine.ocr(name, SAMPLE_PNG, mime_type="image/png")
        else:
            messages: list[ChatMessage] = [{"role": "user", "content": MEASURE_TEXT}]
            await engine.chat(name, ChatRequest(messages, {}))
    except CallFailed as exc:
        return time.monotonic() - started, exc.code
    return time.monotonic() - started, "ok"


def _uncached(lane: LaneConfig) -> LaneConfig:
    """A measured call must reach the upstream: no response or embedding cache."""
    if isinstance(lane, EmbedLaneConfig):
        return lane.model_copy(update={"embed_cache": False})
    return lane.model_copy(update={"cache": None})
