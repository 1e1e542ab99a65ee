"""One client measurement against an OpenAI-compatible upstream, printed as JSON.

Run as a subprocess so LiteLLM can be measured from its own virtualenv on equal
terms: this file imports only the stdlib until the mode picks its library.

    python bench/_engine_load.py MODE BASE_URL CONCURRENCY SECONDS

MODE is ``bare`` (one aiohttp POST per call: the floor), ``laneway``
(``Laneway.chat``) or ``litellm`` (``litellm.Router.acompletion``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

MESSAGES = [{"role": "user", "content": "Say hello in five words."}]
Call = Callable[[], Awaitable[Any]]


async def bare_client(base_url: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    import aiohttp
    import orjson

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000))
    body = orjson.dumps({"model": "sim-model", "messages": MESSAGES})
    headers = {"content-type": "application/json"}

    async def call() -> Any:
        async with session.post(f"{base_url}/chat/completions", data=body, headers=headers) as r:
            return orjson.loads(await r.read())

    return call, session.close


def engine_lane(base_url: str) -> dict[str, Any]:
    """The benchmark's lane: one source, 30 s deadline, 10 s per attempt, two retries."""
    return {
        "deadline": "30s",
        "attempt_timeout": "10s",
        "retries": 2,
        "retry_on": [503, "timeout"],
        "sources": [{"base_url": base_url, "model": "sim-model"}],
    }


async def laneway_client(base_url: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from laneway import Laneway
    from laneway.config import LanewayConfig

    lane = engine_lane(base_url)
    lw = Laneway.from_settings(LanewayConfig.model_validate({"lanes": {"lane": lane}}), environ={})

    async def call() -> Any:
        return await lw.chat("lane", MESSAGES)

    return call, lw.aclose


async def litellm_client(base_url: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    import litellm

    litellm.telemetry = False
    deployment = {"model": "openai/sim-model", "api_base": base_url, "api_key": "sk-sim"}
    router = litellm.Router(
        model_list=[{"model_name": "lane", "litellm_params": deployment}], num_retries=0
    )

    async def call() -> Any:
        return await router.acompletion(model="lane", messages=MESSAGES)

    async def close() -> None:
        return None

    return call, close


async def measure(call: Call, concurrency: int, seconds: float) -> dict[str, Any]:
    for _ in range(50):
        await call()
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - started)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - began
    return {"latencies": latencies, "wall": wall}


async def main(mode: str, base_url: str, concurrency: int, seconds: float) -> None:
    factory = {"bare": bare_client, "laneway": laneway_client, "litellm": litellm_client}[mode]
    call, close = await factory(base_url)
    try:
        result = await measure(call, concurrency, seconds)
    finally:
        await close()
    print(json.dumps(result))


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    mode, url, conc, secs = sys.argv[1:5]
    asyncio.run(main(mode, url, int(conc), float(secs)))
