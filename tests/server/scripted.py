"""A scripted OpenAI-compatible upstream (``MockTransport``) for the inbound dialect tests.

It records every request and answers from what was asked: a tool call of the
first tool when the request offers tools (and ``tool_choice`` is not
``none``), otherwise reasoning and text, with usage that includes cached
tokens. Streams send the same answer as OpenAI chunks: text word by word,
tool arguments in two fragments, then the usage chunk and ``[DONE]``. A
source whose URL holds ``/down/`` answers 503; one with ``/cut/`` streams two
words and breaks off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.http import MockTransport
from tests.server.support import Records, RunningGateway, serve_app

TEXT = "Paris is the capital."
REASONING = "The user asks about France."
ARGUMENTS = '{"city": "Paris", "days": 2}'
USAGE = {
    "prompt_tokens": 30,
    "completion_tokens": 12,
    "total_tokens": 42,
    "prompt_tokens_details": {"cached_tokens": 10},
    "completion_tokens_details": {"reasoning_tokens": 4},
}


class ScriptedUpstream:
    """The handler of a ``MockTransport``; ``bodies`` and ``headers`` are what it received."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        body = orjson.loads(request.body)
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        if "/down/" in request.url:
            error = {"error": {"message": "overloaded", "type": "server_error", "code": None}}
            return HttpResponse(503, {"content-type": "application/json"}, orjson.dumps(error))
        if "/cut/" in request.url:
            cut = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Paris"})]
            raw = b"".join(b"data: " + _event(event) + b"\n\n" for event in cut)
            return HttpResponse(200, {"content-type": "text/event-stream"}, raw)
        if request.url.endswith("/embeddings"):
            return _json(_embeddings(body))
        if body.get("stream"):
            events = [*_chunks(body), "[DONE]"]
            raw = b"".join(b"data: " + _event(event) + b"\n\n" for event in events)
            return HttpResponse(200, {"content-type": "text/event-stream"}, raw)
        return _json(_completion(body))

    @property
    def last(self) -> dict[str, Any]:
        return self.bodies[-1]


def _event(event: object) -> bytes:
    return event.encode() if isinstance(event, str) else orjson.dumps(event)


def _json(payload: dict[str, Any]) -> HttpResponse:
    return HttpResponse(200, {"content-type": "application/json"}, orjson.dumps(payload))


def _tool_name(body: dict[str, Any]) -> str | None:
    tools = body.get("tools")
    if not tools or body.get("tool_choice") == "none":
        return None
    name: str = tools[0]["function"]["name"]
    return name


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "reasoning_content": REASONING}
    name = _tool_name(body)
    if name is None:
        message["content"] = TEXT
        finish = "stop"
    else:
        message["content"] = None
        function = {"name": name, "arguments": ARGUMENTS}
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": function}]
        finish = "tool_calls"
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "upstream-model",
        "choices": [choice],
        "usage": USAGE,
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "model": "upstream-model",
        "choices": [choice],
    }


def _chunks(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield _chunk({"role": "assistant", "content": ""})
    yield _chunk({"reasoning_content": REASONING})
    name = _tool_name(body)
    if name is None:
        words = TEXT.split(" ")
        for index, word in enumerate(words):
            yield _chunk({"content": word if index == 0 else f" {word}"})
        yield _chunk({}, "stop")
    else:
        head = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        yield _chunk({"tool_calls": [head]})
        half = len(ARGUMENTS) // 2
        for piece in (ARGUMENTS[:half], ARGUMENTS[half:]):
            yield _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        yield _chunk({}, "tool_calls")
    yield {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "model": "upstream-model",
        "choices": [],
        "usage": USAGE,
    }


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": i, "embedding": [0.5, 0.5]}
        for i in range(len(body["input"]))
    ]
    return {
        "object": "list",
        "data": data,
        "model": "upstream-embed",
        "usage": {"prompt_tokens": 5, "total_tokens": 5},
    }


def scripted_source(behaviour: str = "ok", **extra: Any) -> dict[str, Any]:
    """A source entry reaching the scripted upstream (``behaviour``: ``ok``, ``down``, ``cut``)."""
    url = f"http://127.0.0.1:9/{behaviour}/v1"
    return {"provider": "openai", "base_url": url, "model": "upstream-model", **extra}


GEMINI = {"provider": "gemini", "base_url": "http://127.0.0.1:9/g", "model": "g", "api_key": "k"}
LANES: dict[str, dict[str, Any]] = {
    "chat": {"sources": [scripted_source()]},
    "down": {"sources": [scripted_source("down")]},
    "cut": {"sources": [scripted_source("cut")]},
    "embed": {"kind": "embed", "sources": [scripted_source()]},
    "gemini-embed": {"kind": "embed", "sources": [GEMINI]},
}
"""The lanes of the shared ``scripted`` fixture (``tests/server/conftest.py``)."""


@dataclass
class Scripted:
    """A gateway over the scripted upstream, and the records of its calls."""

    gw: RunningGateway
    upstream: ScriptedUpstream
    records: Records


@contextmanager
def serve_scripted(
    lanes: dict[str, dict[str, Any]] | None = None,
    environ: Mapping[str, str] | None = None,
    **server: Any,
) -> Iterator[Scripted]:
    """Serve ``lanes`` (default ``LANES``) whose sources all reach one ``ScriptedUpstream``."""
    upstream, records = ScriptedUpstream(), Records()
    settings = LanewayConfig.model_validate(
        {"lanes": lanes or LANES, "server": server, "cache": {"url": ":memory:"}}
    )
    env = dict(environ or {})
    engine = build_engine(settings, env, transport=MockTransport(upstream), observers=[records])
    with serve_app(gateway_over(settings, engine, env)) as running:
        yield Scripted(running, upstream, records)
