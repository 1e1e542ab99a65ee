"""A fixed number of keyed chat requests through the gateway, for instruction counts.

    python bench/_gateway_requests.py CONFIG CALLS [PROMPT_BYTES]
        [--model LANE] [--key KEY] [--access-log json] [--as-served]

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

``bench/cost_ledger.py --instructions`` runs it for each row of the ledger (its
lane, its key, the access log ``--log-level info`` writes) ``--as-served``: on
uvloop, with the heap frozen after the warm-up, as ``laneway serve`` runs (a
full collection then walks only what the calls made, not the whole startup heap
at an arbitrary call). ``gateway_instructions.sh`` keeps asyncio's own loop and
an unfrozen heap, so its figures compare with its earlier ones.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
from pathlib import Path
from typing import Literal

import aiohttp
import orjson
import uvloop

from _serving_entry import served

HELLO = [{"role": "user", "content": "Say hello."}]
WARM_UP = 50


def conversation(size: int) -> list[dict[str, str]]:
    """Alternating turns of 1,000 characters, about ``size`` bytes in all, ending on the user's."""
    turns = max(1, size // 1000) | 1
    roles = ("user", "assistant")
    return [{"role": roles[n % 2], "content": f"turn {n} " + "x" * 992} for n in range(turns)]


def request(prompt_bytes: int, model: str) -> tuple[str, bytes]:
    """The path and body every call sends."""
    if os.environ.get("REQUEST") == "embeddings":
        texts = [f"text number {n}" for n in range(64)]
        asked = {"model": "em", "input": texts, "encoding_format": "base64"}
        return "/v1/embeddings", orjson.dumps(asked)
    messages = conversation(prompt_bytes) if prompt_bytes else HELLO
    return "/v1/chat/completions", orjson.dumps(
        {"model": model, "messages": messages, "max_tokens": 16}
    )


async def main(
    path: Path,
    calls: int,
    prompt_bytes: int,
    *,
    model: str,
    key: str,
    access_log: Literal["json", "text"] | None,
    freeze: bool,
) -> None:
    endpoint, body = request(prompt_bytes, model)
    headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
    async with served(path, access_log) as port, aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{port}{endpoint}"
        for number in range(WARM_UP + calls):
            if freeze and number == WARM_UP:
                gc.collect()
                gc.freeze()
            async with http.post(url, data=body, headers=headers) as response:
                await response.read()
                assert response.status == 200, response.status


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("calls", type=int)
    parser.add_argument("prompt_bytes", type=int, nargs="?", default=0)
    parser.add_argument("--model", default="gw")
    parser.add_argument("--key", default="sk-bench-0123456789")
    parser.add_argument("--access-log", choices=["json", "text"])
    parser.add_argument(
        "--as-served", action="store_true", help="uvloop and a frozen heap, as laneway serve"
    )
    ns = parser.parse_args()
    run = main(
        ns.config,
        ns.calls,
        ns.prompt_bytes,
        model=ns.model,
        key=ns.key,
        access_log=ns.access_log,
        freeze=ns.as_served,
    )
    if ns.as_served:
        uvloop.run(run)
    else:
        asyncio.run(run)
