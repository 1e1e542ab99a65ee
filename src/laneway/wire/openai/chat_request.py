"""OpenAI's chat completions request, read (a caller's body) and written (for a source).

Bodies are checked with plain ``isinstance`` tests, not a schema library: it
is the cheapest check that still answers a wrong body with a 400 naming the
field. Fields laneway does not know pass through to the upstream untouched;
known fields of the wrong type are refused here rather than upstream. The
shapes laneway reads inside fields (messages and their content parts, tool
definitions) and the nesting depth of the whole body are checked by
``laneway.core.shapes``, which other endpoints reuse.

Written for a source, the caller's parameters go as they came, with the
source's model; fields namespaced for native formats (``anthropic``,
``gemini``) stay behind. That is the caller's body as it was sent, but for
those fields and the model: orjson writes it again for less than it would
cost to rewrite the model inside the caller's bytes (``core.passthrough``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from laneway.core.errors import RequestInvalid
from laneway.core.shapes import chat_request, check_depth, check_strings, check_tools
from laneway.core.types import ChatRequest
from laneway.wire.openai.parts import NAMESPACES

_NUMBER = ((int, float), "a number")
_INTEGER = ((int,), "an integer")
_BOOLEAN = ((bool,), "a boolean")
_STRING = ((str,), "a string")
_OBJECT = ((dict,), "an object")
_LIST = ((list,), "a list")

FieldTypes = Mapping[str, tuple[tuple[type, ...], str]]

CHAT_FIELDS: FieldTypes = {
    "stream": _BOOLEAN,
    "stream_options": _OBJECT,
    "temperature": _NUMBER,
    "top_p": _NUMBER,
    "frequency_penalty": _NUMBER,
    "presence_penalty": _NUMBER,
    "max_tokens": _INTEGER,
    "max_completion_tokens": _INTEGER,
    "n": _INTEGER,
    "seed": _INTEGER,
    "top_logprobs": _INTEGER,
    "logprobs": _BOOLEAN,
    "parallel_tool_calls": _BOOLEAN,
    "stop": ((str, list), "a string or a list of strings"),
    "tools": _LIST,
    "tool_choice": ((str, dict), "a string or an object"),
    "response_format": _OBJECT,
    "logit_bias": _OBJECT,
    "metadata": _OBJECT,
    "user": _STRING,
    "reasoning_effort": _STRING,
}
MAX_CHOICES = 128
"""The most ``n`` any provider takes (OpenAI's API: 1 to 128; Gemini's ``candidateCount`` fewer)."""


@dataclass(frozen=True, slots=True)
class ChatCall:
    """A validated chat request and how the caller wants it delivered."""

    request: ChatRequest
    stream: bool
    include_usage: bool


def json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object nested at most ``MAX_DEPTH`` levels, else ``RequestInvalid``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RequestInvalid("body", f"is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise RequestInvalid("body", "must be a JSON object")
    check_depth(data)
    return data


def lane_name(data: Mapping[str, Any]) -> str:
    """The ``model`` field, which names the lane."""
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise RequestInvalid("model", "must be a non-empty string naming a lane")
    return model


def chat_call(data: dict[str, Any], forwarded: Mapping[str, str]) -> ChatCall:
    """Validate a ``/v1/chat/completions`` body (its ``model`` already read).

    ``data`` is consumed: what remains of it becomes the upstream parameters;
    ``forwarded`` are the caller's headers to send upstream.
    """
    check_types(data, CHAT_FIELDS)
    check_tools(data.get("tools"))
    check_strings(data.get("stop"), "stop")
    choices = data.get("n")
    if choices is not None and not 1 <= choices <= MAX_CHOICES:
        raise RequestInvalid("n", f"must be between 1 and {MAX_CHOICES}, got {choices}")
    options = data.get("stream_options") or {}
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise RequestInvalid("stream_options.include_usage", "must be a boolean")
    stream = data.get("stream") is True
    del data["model"]
    request = chat_request(data.pop("messages", None), data, forwarded)
    return ChatCall(request, stream, include_usage)


def check_types(data: Mapping[str, Any], fields: FieldTypes) -> None:
    """Refuse a known field of the wrong type (``null`` means absent, as OpenAI reads it)."""
    for name, value in data.items():
        expected = fields.get(name)
        if expected is None or value is None:
            continue
        kinds, what = expected
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise RequestInvalid(name, f"must be {what}")


def chat_request_body(request: ChatRequest, model: str, *, stream: bool) -> bytes:
    """The body for a source: caller parameters, then the source's model and messages.

    Fields namespaced for native providers (``anthropic``, ``gemini``) stay
    behind; every other unknown field passes through. A stream asks for the
    usage chunk (``stream_options.include_usage``), which laneway records.
    """
    params = request.params
    if not NAMESPACES.isdisjoint(params):
        params = {k: v for k, v in params.items() if k not in NAMESPACES}
    body: dict[str, Any] = {**params, "model": model, "messages": request.messages}
    if stream:
        body["stream"] = True
        options = body.get("stream_options") or {}  # a caller's null is no options
        body["stream_options"] = {**options, "include_usage": True}
    else:
        body.pop("stream", None)
        body.pop("stream_options", None)
    return orjson.dumps(body)
