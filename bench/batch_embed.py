"""A corpus embedded by ``lw.embed_many`` beside an ``asyncio.gather`` loop over the OpenAI SDK.

Both embed the same texts against the same ``laneway sim`` (its own process,
pinned to CPU 0; the clients run here, pinned to CPU 1) in batches of the
same size with the same concurrency:

- ``openai-sdk``: ``AsyncOpenAI.embeddings.create`` per batch under a
  semaphore, ``asyncio.gather`` over all batches: the ad-hoc script (float
  vectors: the simulator does not encode base64, the SDK's default, so the
  SDK builds a model object per float here, which it would not against a
  provider answering base64);
- ``aiohttp + orjson``: the same loop with a bare POST and ``orjson.loads``:
  the floor for any client here, and the fair base for laneway's overhead;
- ``laneway``: ``lw.embed_many`` (paced window, every vector verified, in order);
- ``laneway + job dir``: the same with a job directory (manifest, checkpoint
  line per call, ``failures.jsonl``), as ``laneway batch`` runs.

One run each after a warm-up; items/s and the time laneway adds per item.
Run: ``.venv/bin/python bench/batch_embed.py`` (writes docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
import orjson
from openai import AsyncOpenAI

from _procs import LOOPBACK, free_port, spawn, wait_ready
from _report import provenance, write_section
from laneway import Laneway
from laneway.config.models import LanewayConfig

ROOT = Path(__file__).resolve().parents[1]
ITEMS = 10_000
BATCH = 64
CONCURRENCY = 4
DIMENSIONS = 256
EMBED = b'{"model":"m","input":["warm"]}'


def corpus() -> list[str]:
    return [f"passage {n}: a sentence of a corpus to be embedded" for n in range(ITEMS)]


async def openai_sdk(base_url: str, texts: list[str]) -> int:
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(batch: list[str]) -> list[list[float]]:
        async with gate:
            answer = await client.embeddings.create(model="m", input=batch, dimensions=DIMENSIONS)
            return [item.embedding for item in answer.data]

    batches = [texts[i : i + BATCH] for i in range(0, len(texts), BATCH)]
    vectors = [v for part in await asyncio.gather(*map(one, batches)) for v in part]
    await client.close()
    return len(vectors)


def lane(base_url: str) -> LanewayConfig:
    body = {
        "kind": "embed",
        "dimensions": DIMENSIONS,
        "max_batch_items": BATCH,
        "sources": [{"base_url": base_url, "model": "m", "price": {"input": 0.02}}],
    }
    return LanewayConfig.model_validate({"lanes": {"emb": body}})


async def bare(base_url: str, texts: list[str]) -> int:
    gate = asyncio.Semaphore(CONCURRENCY)
    async with aiohttp.ClientSession() as session:

        async def one(batch: list[str]) -> list[list[float]]:
            body = orjson.dumps({"model": "m", "input": batch, "dimensions": DIMENSIONS})
            async with gate, session.post(f"{base_url}/embeddings", data=body) as answer:
                data = orjson.loads(await answer.read())["data"]
            return [item["embedding"] for item in data]

        batches = [texts[i : i + BATCH] for i in range(0, len(texts), BATCH)]
        parts = await asyncio.gather(*map(one, batches))
    return sum(len(part) for part in parts)


async def laneway(base_url: str, texts: list[str], job_dir: Path | None) -> int:
    async with Laneway.from_settings(lane(base_url), environ={}) as lw:
        job = lw.embed_many("emb", texts, job_dir=job_dir, max_concurrency=CONCURRENCY)
        return len([result async for result in job if result.ok])


def timed(run: Callable[[], Coroutine[None, None, int]]) -> tuple[float, int]:
    began = time.perf_counter()
    count = asyncio.run(run())
    return time.perf_counter() - began, count


def main() -> int:
    header = provenance(".venv/bin/python bench/batch_embed.py")
    port = free_port()
    sim = spawn("sim", [str(ROOT / ".venv/bin/laneway"), "sim", "--port", str(port)], cpu=0)
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {1})
    texts = corpus()
    try:
        wait_ready(sim, port, "/v1/embeddings", EMBED)
        base = f"http://{LOOPBACK}:{port}/v1"
        timed(lambda: openai_sdk(base, texts[:1000]))
        timed(lambda: bare(base, texts[:1000]))
        timed(lambda: laneway(base, texts[:1000], None))
        with tempfile.TemporaryDirectory() as scratch:
            runs = {
                "openai-sdk + asyncio.gather": timed(lambda: openai_sdk(base, texts)),
                "aiohttp + orjson + asyncio.gather": timed(lambda: bare(base, texts)),
                "laneway embed_many": timed(lambda: laneway(base, texts, None)),
                "laneway embed_many + job dir": timed(
                    lambda: laneway(base, texts, Path(scratch) / "job")
                ),
            }
    finally:
        sim.stop()
    write_section("batch-embed", report(runs, header))
    print(report(runs, header))
    return 0


def report(runs: dict[str, tuple[float, int]], header: str) -> str:
    sdk = runs["openai-sdk + asyncio.gather"][0]
    floor = runs["aiohttp + orjson + asyncio.gather"][0]
    rows = []
    for name, (seconds, count) in runs.items():
        added = (seconds - floor) / ITEMS * 1e6
        rows.append(
            f"| {name} | {count:,} | {seconds:.2f} | {count / seconds:,.0f} | "
            f"{seconds / sdk:.2f}x | {added:+.1f} |"
        )
    return "\n".join(
        [
            "## Batch embedding: `lw.embed_many` vs an `asyncio.gather` loop over the OpenAI SDK",
            "",
            header,
            f"{ITEMS:,} texts in batches of {BATCH}, concurrency {CONCURRENCY}, "
            f"{DIMENSIONS}-dim vectors; `laneway sim` (latency ~0) pinned to CPU 0, "
            "clients on CPU 1; one run each after a 1,000-item warm-up. The SDK answers are "
            "float lists (the simulator has no base64), which the SDK turns into one model "
            "object per float; against base64 answers it would come near the aiohttp floor.",
            "",
            "| client | vectors | seconds | items/s | time vs SDK | added per item over "
            "aiohttp µs |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
