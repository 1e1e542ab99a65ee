"""The three wire formats as test parameters, and lanes pointing at the simulator."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from laneway.config.models import LanewayConfig
from laneway.core.types import ChatChunk
from laneway.providers.base import Provider
from laneway.sim import RunningSim
from tests.helpers import Upstream

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Wire:
    """One wire format: its ``provider:`` name, the sim's API root, what it can do."""

    name: str
    root: str
    source: dict[str, Any] = field(default_factory=dict)
    embeds: bool = True
    counts_reasoning: bool = True
    """Whether the API reports reasoning tokens apart (Anthropic bills them as output)."""


OPENAI = Wire("openai", "v1")
AZURE = Wire("azure", "", {"api_key": "sim-key", "api_version": "2024-10-21"})
GEMINI = Wire("gemini", "v1beta")
ANTHROPIC = Wire("anthropic", "v1", {"max_tokens": 256}, embeds=False, counts_reasoning=False)
WIRES = [OPENAI, GEMINI, ANTHROPIC, AZURE]


def source(sim: Upstream, wire: Wire, spec: str) -> dict[str, Any]:
    """A source of ``wire`` at the sim, behaving as ``spec``."""
    url = f"{sim.base_url}/b/{spec}/{wire.root}".rstrip("/")
    return {"provider": wire.name, "base_url": url, "model": "sim-model", **wire.source}


def config(sim: Upstream, wire: Wire, spec: str, **lane: Any) -> LanewayConfig:
    """One lane called ``lane`` with one source of ``wire``."""
    body = {"sources": [source(sim, wire, spec)], **lane}
    return LanewayConfig.model_validate({"lanes": {"lane": body}})


async def hits(sim: RunningSim, spec: str) -> int:
    """How many requests the sim served for ``spec``."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response,
    ):
        return int((await response.json())["count"])


def fixture(name: str) -> bytes:
    """The bytes of a recorded-shape answer in ``fixtures/``."""
    return (FIXTURES / name).read_bytes()


def sse_events(provider: Provider, name: str) -> list[ChatChunk | None]:
    """Feed a stream fixture's ``data:`` lines to one stream parser, as the engine does."""
    parser = provider.stream_parser()
    lines = fixture(name).splitlines()
    return [parser.parse_event(line[5:].strip()) for line in lines if line.startswith(b"data:")]
