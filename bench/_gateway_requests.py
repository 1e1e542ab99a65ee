"""A fixed number of keyed chat requests through the gateway, for instruction counts.

    python bench/_gateway_requests.py CONFIG CALLS [PROMPT_BYTES]

The ``laneway serve`` app of ``CONFIG`` (``build_gateway``: key limits, metrics,
telemetry as the config names them) runs on uvicorn with laneway's protocol in
this process, and an aiohttp client in the same event loop sends ``CALLS``
chat completions one at a time after 50 warm-up ones. Run under ``valgrind
--tool=callgrind`` twice with different ``CALLS`` (``gateway_instructions.sh``):
the difference of the totals over the difference of the calls is the
instructions of one request, server and client; the client is this checkout's
aiohttp for every tree, so an A/B of two trees differs only in the gateway.
``PROMPT_BYTES`` (default 0: one short message) sends a conversation of
about that many bytes instead (user and assistant turns of 1,000 characters).
With ``REQUEST=embeddings`` in the environment it sends base64 embeddings
requests of 64 texts to the lane ``em`` instead (``gateway_instructions.sh``
adds it, pinned to 1,536 dimensions).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp
import orjson

from laneway.cli.compose import build_gateway
from laneway.cli.serve import config_dir
from laneway.config.load import load_config
from laneway.server.prompt import PromptServer
from laneway.server.run import uvicorn_config

HELLO = [{"role": "user", "content": "Say hello."}]
HEADERS = {"Authorization": "Bearer sk-bench-0123456789", "content-type": "application/json"}


def conversation(size: int) -> list[dict[str, str]]:
    """Alternating turns of 1,000 characters, about ``size`` bytes in all, ending on the user's."""
    turns = max(1, size // 1000) | 1
    roles = ("user", "assistant")
    return [{"role": roles[n % 2], "content": f"turn {n} " + "x" * 992} for n in range(turns)]


def request(prompt_bytes: int) -> tuple[str, bytes]:
    """The path and body every call sends."""
    if os.environ.get("REQUEST") == "embeddings":
        texts = [f"text number {n}" for n in range(64)]
        asked = {"model": "em", "input": texts, "encoding_format": "base64"}
        return "/v1/embeddings", orjson.dumps(asked)
    messages = conversation(prompt_bytes) if prompt_bytes else HELLO
    return "/v1/chat/completions", orjson.dumps(
        {"model": "gw", "messages": messages, "max_tokens": 16}
    )


async def main(path: Path, calls: int, prompt_bytes: int) -> None:
    endpoint, body = request(prompt_bytes)
    config, environ = load_config(path)
    gateway = build_gateway(config, environ, config_dir(path))
    server = PromptServer(uvicorn_config(gateway, host="127.0.0.1", port=0, drain_timeout=1.0))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn has no event to wait on)
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}{endpoint}"
    async with aiohttp.ClientSession() as http:
        for _ in range(50 + calls):
            async with http.post(url, data=body, headers=HEADERS) as response:
                await response.read()
                assert response.status == 200, response.status
    server.stop()
    await serving


if __name__ == "__main__":
    prompt = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]), prompt))
