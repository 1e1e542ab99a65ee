"""A fixed number of keyed chat requests through the gateway, for instruction counts.

    python bench/_gateway_requests.py CONFIG CALLS

The ``laneway serve`` app of ``CONFIG`` (``build_gateway``: key limits, metrics,
telemetry as the config names them) runs on uvicorn with laneway's protocol in
this process, and an aiohttp client in the same event loop sends ``CALLS``
chat completions one at a time after 50 warm-up ones. Run under ``valgrind
--tool=callgrind`` twice with different ``CALLS`` (``gateway_instructions.sh``):
the difference of the totals over the difference of the calls is the
instructions of one request, server and client; the client is this checkout's
aiohttp for every tree, so an A/B of two trees differs only in the gateway.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
import orjson

from laneway.cli.compose import build_gateway
from laneway.cli.serve import config_dir
from laneway.config.load import load_config
from laneway.server.prompt import PromptServer
from laneway.server.run import uvicorn_config

BODY = orjson.dumps(
    {"model": "gw", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16}
)
HEADERS = {"Authorization": "Bearer sk-bench-0123456789", "content-type": "application/json"}


async def main(path: Path, calls: int) -> None:
    config, environ = load_config(path)
    gateway = build_gateway(config, environ, config_dir(path))
    server = PromptServer(uvicorn_config(gateway, host="127.0.0.1", port=0, drain_timeout=1.0))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn has no event to wait on)
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/v1/chat/completions"
    async with aiohttp.ClientSession() as http:
        for _ in range(50 + calls):
            async with http.post(url, data=BODY, headers=HEADERS) as response:
                await response.read()
                assert response.status == 200, response.status
    server.stop()
    await serving


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
