"""A fixed number of keyed streamed chat calls through the gateway, for instruction counts.

    python bench/_stream_requests.py CONFIG STREAMS
    python bench/_stream_requests.py bare:UPSTREAM_URL STREAMS

The ``laneway serve`` app of ``CONFIG`` (``build_gateway``: key limits,
metrics, telemetry as the config names them, the JSON access log to stderr)
runs on uvicorn with laneway's protocol in this process, on uvloop as
``laneway serve`` runs, and an aiohttp client in the same event loop reads
``STREAMS`` streamed chat completions one at a time after 5 warm-up ones,
from the lane ``gw``, whose source is the stamp upstream
(``_stamp_upstream.py``: its ``--chunks`` and pacing say how many events a
stream has and how many reach the gateway in one network read). Run under
``valgrind --tool=callgrind`` with different chunk counts
(``streaming_instructions.sh``): the difference of the totals over the
difference of the chunks is the instructions of one relayed chunk, server and
client; the client is this checkout's aiohttp for every tree. ``bare:URL``
serves the floor instead (``_bare_proxy.py``: uvicorn + aiohttp relaying the
bytes as they come) in front of the upstream at ``URL``, on the same uvicorn
settings and loop, so its count is the same work without laneway.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
import orjson
import uvicorn
import uvloop

from _bare_proxy import BareProxy
from _serving_entry import build_gateway, uvicorn_config
from laneway.cli.serve import config_dir
from laneway.config.load import load_config
from laneway.server.prompt import PromptServer

BODY = orjson.dumps(
    {"model": "gw", "messages": [{"role": "user", "content": "Tell me a story."}], "stream": True}
)
HEADERS = {"Authorization": "Bearer sk-bench-0123456789", "content-type": "application/json"}


def server_of(where: str) -> PromptServer:
    """laneway's gateway over the config at ``where``, or (``bare:URL``) the bare relay."""
    if where.startswith("bare:"):
        bare = BareProxy(where.removeprefix("bare:"))
        settings = uvicorn.Config(
            bare,
            host="127.0.0.1",
            port=0,
            http="httptools",
            ws="none",
            proxy_headers=False,
            server_header=False,
            lifespan="on",
            access_log=False,
            log_level="warning",
        )
        return PromptServer(settings)
    path = Path(where)
    config, environ = load_config(path)
    gateway = build_gateway(config, environ, config_dir(path), access_log="json")
    return PromptServer(uvicorn_config(gateway, host="127.0.0.1", port=0, drain_timeout=1.0))


async def main(where: str, streams: int) -> None:
    server = server_of(where)
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn has no event to wait on)
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/v1/chat/completions"
    async with aiohttp.ClientSession() as http:
        for _ in range(5 + streams):
            async with http.post(url, data=BODY, headers=HEADERS) as response:
                body = await response.read()
                assert response.status == 200, response.status
                assert body.endswith(b"data: [DONE]\n\n"), body[-200:]
    server.stop()
    await serving


if __name__ == "__main__":
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # as laneway serve runs
        runner.run(main(sys.argv[1], int(sys.argv[2])))
