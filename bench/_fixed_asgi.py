"""A raw ASGI app that answers every POST with one fixed chat completion.

It is both the loopback *upstream* for client benchmarks and the *server candidate*
for server benchmarks: having no framework and no per-request work means the figures
measure the HTTP stack itself, not application code. It depends on the standard
library only, so any venv (e.g. one holding granian but not uvicorn) can import it.

Run under uvicorn:  ``python bench/_fixed_asgi.py --port 8000 --http httptools``
Run under granian:  ``granian --interface asgi --working-dir bench _fixed_asgi:app``
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# ~300 bytes: the size of a short non-streaming OpenAI chat completion.
CHAT_COMPLETION = (
    b'{"id":"chatcmpl-bench0001","object":"chat.completion","created":1700000000,'
    b'"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant",'
    b'"content":"Hello! How can I help you today?","refusal":null},'
    b'"logprobs":null,"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}'
)
# What benchmark clients POST: a minimal chat completion request.
REQUEST_BODY = (
    b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}],"max_tokens":16}'
)
_JSON_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(CHAT_COMPLETION)).encode()),
]
_405_HEADERS = [(b"content-length", b"0"), (b"allow", b"POST")]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """ASGI entry point: fixed JSON for POST, 405 otherwise, lifespan acknowledged."""
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    if scope["type"] != "http":
        return
    await _drain_body(receive)
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": _405_HEADERS})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": _JSON_HEADERS})
    await send({"type": "http.response.body", "body": CHAT_COMPLETION})


async def _drain_body(receive: Receive) -> None:
    """Read the whole request body, as a real handler must before keep-alive reuse."""
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)


async def _lifespan(receive: Receive, send: Send) -> None:
    """Acknowledge startup/shutdown so servers do not log lifespan warnings."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def main() -> None:
    """Serve :func:`app` with uvicorn (one worker, uvloop) on 127.0.0.1."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--http", choices=("httptools", "h11"), default="httptools")
    args = parser.parse_args()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        http=args.http,
        loop="uvloop",
        workers=1,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
